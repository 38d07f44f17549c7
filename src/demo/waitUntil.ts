/** Polls `check` every 100 ms until it holds; an error naming `what` after `ms`. */
export async function waitUntil(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`demo: ${what}: not reached within ${Math.round(ms / 1000)} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
