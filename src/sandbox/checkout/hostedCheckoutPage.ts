import type { CheckoutIntentWire, SandboxIntentView } from './checkoutEngine.ts';

/**
 * The hosted checkout page at checkout_url: a small HTML page showing what to pay and where. It
 * is only a landing page (the buyer "pays" through the control API); opening it is what moves an
 * intent from CREATED to VIEWED.
 */
export function renderHostedCheckoutPage(intent: SandboxIntentView): string {
  const redirectUrl = intent.sandbox.redirect_url;
  const rows: Array<[string, string | number | null]> = [
    ['Amount', `${intent.amount_coins} ${intent.coin_symbol}`],
    ['Priced as', intent.currency_symbol && intent.amount_cents !== null ? fiat(intent) : null],
    ['Order', intent.order_id],
    ['Description', intent.order_description],
    ['Chain', intent.chain_id],
    ['Token contract', intent.coin_contract],
    ['Pay to', intent.tx_to],
    ['Status', intent.status],
  ];
  const body = rows
    .filter(([, value]) => value !== null)
    .map(([label, value]) => `<tr><th>${escapeHtml(label)}</th><td>${escapeHtml(String(value))}</td></tr>`)
    .join('\n');
  // Only http(s) links: a merchant-supplied javascript: URL must not run on the sandbox's origin.
  const back =
    redirectUrl && /^https?:\/\//i.test(redirectUrl)
      ? `<p><a href="${escapeHtml(redirectUrl)}">Return to the merchant</a></p>`
      : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Checkout ${escapeHtml(intent.all_svc_checkout_intent_id)}</title></head>
<body><h1>Sandbox checkout</h1>
<table>
${body}
</table>
<p>This is the stablebooks sandbox: pay with POST /_sandbox/intents/${escapeHtml(intent.all_svc_checkout_intent_id)}/pay</p>
${back}</body></html>
`;
}

export function renderUnknownCheckoutPage(): string {
  return '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Checkout not found</title></head><body><h1>Checkout not found</h1></body></html>\n';
}

function fiat(intent: CheckoutIntentWire): string {
  const cents = String(intent.amount_cents).padStart(3, '0');
  return `${cents.slice(0, -2)}.${cents.slice(-2)} ${intent.currency_symbol} at ${intent.currency_rate} per coin`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
