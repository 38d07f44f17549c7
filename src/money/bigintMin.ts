/** The smaller of two bigints (Math.min takes numbers only, and money is never a number here). */
export function bigintMin(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
