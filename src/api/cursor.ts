/**
 * The opaque keyset cursor of the read API's lists (`next_cursor`, given back as `cursor=`). It
 * holds which list it belongs to and the id of the last item of the page: the next page is the
 * items below that id, in the same order (newest first by id). Ids only grow and listed rows are
 * never deleted, so a page never repeats or skips an item when rows are added meanwhile.
 * Base64url of `<list>:<id>`, versioned by its prefix; clients must not build or read one.
 */
export type CursorList = 'entries' | 'findings';

const VERSION = 'v1';

export function encodeCursor(list: CursorList, lastId: bigint): string {
  return Buffer.from(`${VERSION}:${list}:${lastId}`, 'utf8').toString('base64url');
}

/** The id a cursor of `list` continues below, or undefined when it is not one this API gave. */
export function decodeCursor(list: CursorList, cursor: string): bigint | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^v1:(entries|findings):([1-9]\d{0,18})$/.exec(text);
  if (!match || match[1] !== list) return undefined;
  const id = BigInt(match[2] as string);
  return id <= 9_223_372_036_854_775_807n ? id : undefined;
}
