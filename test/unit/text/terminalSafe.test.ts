import { describe, expect, it } from 'vitest';
import { renderTable } from '../../../src/text/table.ts';
import { terminalSafe, terminalSafeJson } from '../../../src/text/terminalSafe.ts';

describe('terminalSafe', () => {
  it('behavior: C0, DEL, C1 and bidirectional controls are shown escaped; printable text is unchanged', () => {
    expect(terminalSafe('a\u001b[31mb\u0007c\u007fd\u009be\u202ef\u2066g')).toBe(
      'a\\x1b[31mb\\x07c\\x7fd\\x9be\\u202ef\\u2066g',
    );
    expect(terminalSafe('line\r\nnext\tcol')).toBe('line\\x0d\\x0anext\\x09col');
    expect(terminalSafe('line\nnext\tcol', { newlines: true, tabs: true })).toBe('line\nnext\tcol');
    expect(terminalSafe('ünïcödé 25.00 USDT → ok')).toBe('ünïcödé 25.00 USDT → ok');
  });

  it('behavior: JSON keeps its meaning: what it escapes parses back to the same string', () => {
    const value = { ref: 'x\u009b2J\u007f\u202e\u001b' };
    const json = terminalSafeJson(JSON.stringify(value, null, 2));
    for (const c of ['\u007f', '\u009b', '\u202e', '\u001b']) expect(json).not.toContain(c);
    expect(JSON.parse(json)).toEqual(value);
  });

  it('behavior: a table escapes its cells before measuring them, so columns still line up', () => {
    const table = renderTable(
      ['ref', 'n'],
      [
        ['a\u001bb', '1'],
        ['plain', '2'],
      ],
    );
    const lines = table.split('\n');
    expect(lines).toEqual(['ref     n', '------  -', 'a\\x1bb  1', 'plain   2']);
  });
});
