/**
 * Text made safe to print to a terminal. What the CLI prints comes from the database, and much
 * of that from outside: ref ids, memos and store ids the payments service or a webhook sent, notes
 * a person typed. A terminal obeys control characters in it: ESC starts sequences that recolour,
 * retitle or move the cursor (and on some terminals answer back), BEL rings, CR returns over what
 * was printed, and a bidirectional override reorders what follows. Each such character is shown
 * escaped instead, `\x1b`, `\u202e`: visible, so a person sees that something odd is there.
 *
 * Escaped: C0 (U+0000-U+001F) but the line breaks and tabs `keep` lets through, DEL and C1
 * (U+007F-U+009F; U+009B is CSI on its own), the Unicode line and paragraph separators, and the
 * bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it escapes.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function terminalSafe(text: string, keep: { newlines?: boolean; tabs?: boolean } = {}): string {
  return text.replace(UNSAFE, (c) => {
    if ((c === '\n' && keep.newlines) || (c === '\t' && keep.tabs)) return c;
    return escapeCharacter(c);
  });
}

/**
 * JSON text (JSON.stringify's) made safe the same way: JSON.stringify escapes C0 in strings but
 * leaves DEL, C1 and the others raw. Those can only stand inside a JSON string, where `\u00XX` means the same
 * character, so the document parses to the same value.
 */
export function terminalSafeJson(json: string): string {
  // Raw C0 in JSON text is only the layout's own line breaks: inside strings it is escaped.
  return json.replace(UNSAFE, (c) =>
    c === '\n' ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function escapeCharacter(c: string): string {
  const code = c.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}
