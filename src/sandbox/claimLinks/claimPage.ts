import { escapeHtml } from '../../html/escapeHtml.ts';
import type { ClaimPageView } from './claimLinkEngine.ts';

/**
 * The tiny page behind a claim_url. It shows what the recipient of a link would see (amount,
 * sender, status) and nothing secret: not the token, the pool wallet or the merchant's ids. Real
 * claiming is simulated through the control API (POST /_sandbox/claim_links/{id}/claim).
 */
const STATUS_LINE: Record<ClaimPageView['status'], string> = {
  pending_deposit: 'This payout is being funded. Check back shortly.',
  link_sent: 'This payout is ready to claim.',
  claiming: 'This payout is being claimed.',
  claimed: 'This payout has been claimed.',
  expired: 'This link has expired; the funds went back to the sender.',
  cancelled: 'This link was cancelled by the sender and can no longer be used.',
};

export function renderClaimPage(link: ClaimPageView | undefined): { status: number; html: string } {
  const page = (title: string, body: string) =>
    `<!doctype html><html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title></head><body>${body}</body></html>`;
  if (!link) {
    return { status: 404, html: page('Claim link not found', '<h1>Claim link not found</h1>') };
  }
  const from = link.sender_display_name ? `<p>From: ${escapeHtml(link.sender_display_name)}</p>` : '';
  const note = link.sender_message ? `<blockquote>${escapeHtml(link.sender_message)}</blockquote>` : '';
  return {
    status: 200,
    html: page(
      'Claim your payout',
      `<h1>${escapeHtml(link.amount)} ${escapeHtml(link.token_symbol)} on ${escapeHtml(link.chain_name)}</h1>` +
        from +
        note +
        `<p data-status="${escapeHtml(link.status)}">${escapeHtml(STATUS_LINE[link.status])}</p>` +
        `<p>Expires ${escapeHtml(link.expires_at)}</p>`,
    ),
  };
}
