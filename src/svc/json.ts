/**
 * JSON for request bodies. The service takes integer money fields (amount_cents) as bare JSON
 * integers, while our code holds them as bigint, which JSON.stringify refuses. Writing the digits
 * directly keeps the value exact without ever passing it through a `number`.
 */
import { randomUUID } from 'node:crypto';

export function stringifyJson(value: unknown): string {
  // A per-call random marker: no string already in `value` can collide with it.
  const marker = `bigint_${randomUUID().replaceAll('-', '')}_`;
  let sawBigint = false;
  const text: string | undefined = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'bigint') return v;
    sawBigint = true;
    return `${marker}${v.toString()}`;
  });
  if (text === undefined) {
    throw new TypeError(`stringifyJson: a ${typeof value} value has no JSON form`);
  }
  return sawBigint ? text.replace(new RegExp(`"${marker}(-?\\d+)"`, 'g'), '$1') : text;
}
