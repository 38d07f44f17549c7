import { defineConfig } from 'drizzle-kit';

// drizzle-kit generates SQL from the Drizzle schemas into migrations/; hand-written SQL
// (triggers, constraints) goes in as custom migrations (`npx drizzle-kit generate --custom`).
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/**/schema.ts',
  out: './migrations',
  dbCredentials: { url: process.env.DATABASE_URL ?? 'postgres://localhost/stablebooks' },
});
