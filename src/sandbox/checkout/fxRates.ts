/**
 * The sandbox's fixed FX table: how many units of each fiat Currency one USD stable coin buys,
 * and the exact conversion of fiat cents into stable-coin base units.
 *
 * Glossary
 * - rate: units of the fiat per 1 coin, a decimal string ("0.92" for EUR); it is what the intent
 *   reports as currency_rate and the create result as rate, so amount_coins = fiat / rate;
 * - base units: the coin's smallest unit at a given number of decimals (bigint).
 *
 * The rates are plausible, fixed values (2024 levels), not live quotes: a sandbox must be
 * repeatable. USDT and USDC are both treated as exactly 1 USD, so one table serves both coins.
 * Conversion is pure bigint arithmetic, rounded half-up to the requested decimals.
 */
import { Currency } from '../../svc/models/currency.ts';

// biome-ignore format: one currency per line, in enum order, reads as the table it is
export const FX_RATES: Readonly<Record<Currency, string>> = {
  [Currency.USD]: '1',
  [Currency.AED]: '3.6725',
  [Currency.AFN]: '71.5',
  [Currency.ALL]: '93.5',
  [Currency.AMD]: '388',
  [Currency.ANG]: '1.79',
  [Currency.AOA]: '835',
  [Currency.ARS]: '870',
  [Currency.AUD]: '1.52',
  [Currency.AWG]: '1.79',
  [Currency.AZN]: '1.7',
  [Currency.BAM]: '1.8',
  [Currency.BBD]: '2',
  [Currency.BDT]: '109.7',
  [Currency.BGN]: '1.8',
  [Currency.BHD]: '0.376',
  [Currency.BIF]: '2860',
  [Currency.BMD]: '1',
  [Currency.BND]: '1.35',
  [Currency.BOB]: '6.91',
  [Currency.BRL]: '5.05',
  [Currency.BSD]: '1',
  [Currency.BTN]: '83.3',
  [Currency.BWP]: '13.6',
  [Currency.BYN]: '3.27',
  [Currency.BZD]: '2',
  [Currency.CAD]: '1.36',
  [Currency.CDF]: '2780',
  [Currency.CHF]: '0.9',
  [Currency.CLP]: '950',
  [Currency.CNY]: '7.23',
  [Currency.COP]: '3900',
  [Currency.CRC]: '505',
  [Currency.CUP]: '24',
  [Currency.CVE]: '101.5',
  [Currency.CZK]: '23.3',
  [Currency.DJF]: '177.7',
  [Currency.DKK]: '6.88',
  [Currency.DOP]: '59',
  [Currency.DZD]: '134.5',
  [Currency.EGP]: '47.5',
  [Currency.ERN]: '15',
  [Currency.ETB]: '57',
  [Currency.EUR]: '0.92',
  [Currency.FJD]: '2.26',
  [Currency.FKP]: '0.79',
  [Currency.FOK]: '6.88',
  [Currency.GBP]: '0.79',
  [Currency.GEL]: '2.68',
  [Currency.GGP]: '0.79',
  [Currency.GHS]: '13.5',
  [Currency.GIP]: '0.79',
  [Currency.GMD]: '67.5',
  [Currency.GNF]: '8600',
  [Currency.GTQ]: '7.8',
  [Currency.GYD]: '209',
  [Currency.HKD]: '7.82',
  [Currency.HNL]: '24.7',
  [Currency.HRK]: '6.95',
  [Currency.HTG]: '132.5',
  [Currency.HUF]: '365',
  [Currency.IDR]: '15900',
  [Currency.ILS]: '3.7',
  [Currency.IMP]: '0.79',
  [Currency.INR]: '83.3',
  [Currency.IQD]: '1310',
  [Currency.IRR]: '42000',
  [Currency.ISK]: '138.5',
  [Currency.JEP]: '0.79',
  [Currency.JMD]: '155',
  [Currency.JOD]: '0.709',
  [Currency.JPY]: '151.3',
  [Currency.KES]: '132',
};

const RATE_RE = /^\d+(?:\.\d+)?$/;

/** A rate as the exact fraction numerator / denominator ("151.3" -> 1513 / 10). */
function rateFraction(rate: string): { num: bigint; den: bigint } {
  if (!RATE_RE.test(rate)) throw new RangeError(`FX rate ${JSON.stringify(rate)} is not a decimal string`);
  const [whole = '', fraction = ''] = rate.split('.');
  const num = BigInt(whole + fraction);
  if (num === 0n) throw new RangeError('FX rate must be greater than 0');
  return { num, den: 10n ** BigInt(fraction.length) };
}

/** n / d rounded half-up (half away from zero for the non-negative values used here). */
export function divideRoundHalfUp(n: bigint, d: bigint): bigint {
  if (d <= 0n || n < 0n) throw new RangeError('divideRoundHalfUp expects n >= 0 and d > 0');
  return (2n * n + d) / (2n * d);
}

export function fxRate(currency: Currency): string {
  return FX_RATES[currency];
}

/**
 * Fiat cents -> coin base units at `decimals`: cents / 100 / rate, exactly, rounded half-up to
 * one base unit. Example: 1000 EUR cents at 0.92 and 6 decimals = 10.869565 (10.8695652...).
 * Negative cents (a create request below the 0.1-coin floor) convert symmetrically, half away
 * from zero: -1000 EUR cents = -10.869565.
 */
export function fiatCentsToCoinUnits(cents: bigint, rate: string, decimals: number): bigint {
  if (cents < 0n) return -fiatCentsToCoinUnits(-cents, rate, decimals);
  const { num, den } = rateFraction(rate);
  return divideRoundHalfUp(cents * 10n ** BigInt(decimals) * den, 100n * num);
}
