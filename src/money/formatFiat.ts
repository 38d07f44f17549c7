import { formatDecimalAmount } from './decimalAmount.ts';

/**
 * A fiat value in minor units as the accountant writes it: always the currency's minor digits
 * ("33.30", "-0.01", "1200" for a currency without a minor unit). Token amounts drop trailing
 * zeros (formatDecimalAmount); money in a currency keeps its cents.
 */
export function formatFiat(minor: bigint, minorUnit: number): string {
  const text = formatDecimalAmount(minor, minorUnit);
  if (minorUnit === 0) return text;
  const [whole, fraction = ''] = text.split('.');
  return `${whole}.${fraction.padEnd(minorUnit, '0')}`;
}
