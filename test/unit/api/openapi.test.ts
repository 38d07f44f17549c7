import SwaggerParser from '@apidevtools/swagger-parser';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../../src/api/openapi.ts';
import { API_PREFIX } from '../../../src/api/route.ts';
import { readApiRoutes } from '../../../src/api/routes.ts';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';

/**
 * The read API's OpenAPI document, generated from the routes' zod schemas, is a valid OpenAPI 3.1
 * document to two maintained validators, and documents every route with its answers.
 */
const domain = { db: undefined as never, chains: createChainRegistry(), encryptionKey: Buffer.alloc(32) };
const routes = readApiRoutes(domain, () => ({}));
const doc = buildOpenApiDocument(routes, '1.0.0');

describe('read API: the OpenAPI document', () => {
  it('behavior: swagger-parser validates it as OpenAPI 3.1, $refs resolved', async () => {
    const api = await SwaggerParser.validate(structuredClone(doc) as never);
    expect((api as { openapi: string }).openapi).toBe('3.1.0');
  });

  it("behavior: Redocly's recommended rules find no problem, warnings included", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({
      source: JSON.stringify(doc),
      absoluteRef: 'openapi.json',
      config,
    });
    expect(
      problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`),
    ).toEqual([]);
  });

  it('behavior: one GET operation per route, each with its 200 schema and the error answers', () => {
    const paths = doc.paths as Record<string, { get: Record<string, unknown> }>;
    expect(Object.keys(paths).sort()).toEqual(
      [
        '/balances',
        '/entries',
        '/findings',
        '/intents',
        '/intents/{id}',
        '/openapi.json',
        '/payouts/{id}',
      ].map((p) => `${API_PREFIX}${p}`),
    );
    for (const [path, item] of Object.entries(paths)) {
      const responses = item.get.responses as Record<string, unknown>;
      expect(Object.keys(responses), path).toEqual(expect.arrayContaining(['200', '400', '401', '500']));
      expect(Boolean(responses['404']), path).toBe(path.endsWith('{id}'));
    }
    const findings = paths[`${API_PREFIX}/findings`]!.get.parameters as Array<Record<string, unknown>>;
    expect(findings.map((p) => p.name)).toEqual(['status', 'kind', 'severity', 'store', 'limit', 'cursor']);
    expect(findings.find((p) => p.name === 'status')).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'string', enum: ['open', 'resolved', 'all'], default: 'open' },
    });
    const byOrder = paths[`${API_PREFIX}/intents`]!.get.parameters as Array<Record<string, unknown>>;
    expect(byOrder.find((p) => p.name === 'order_id')).toMatchObject({ required: true });
  });

  it('behavior: money is never a JSON number: every amount is a string in the schemas', () => {
    const schemas = (doc.components as { schemas: Record<string, { properties?: Record<string, unknown> }> })
      .schemas;
    const amountLike = /(^|_)(amount|balance|debits|credits|net|value)(_|$)|base_units/;
    const checked: string[] = [];
    for (const [id, schema] of Object.entries(schemas))
      for (const [name, prop] of Object.entries(schema.properties ?? {}))
        if (amountLike.test(name)) {
          checked.push(`${id}.${name}`);
          expect(JSON.stringify(prop), `${id}.${name}`).not.toMatch(/"type":"(number|integer)"/);
        }
    expect(checked).toEqual(
      expect.arrayContaining([
        'Posting.amount',
        'AccountBalance.balance',
        'TrialBalanceLine.net',
        'Payout.amount',
      ]),
    );
  });
});
