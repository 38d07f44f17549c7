/**
 * Minor unit of a fiat currency (ISO 4217 exponent): the valuation rounds to it, once per posting
 * (docs/accounting.md, "Valuation"). Two decimals unless listed here.
 */
const EXPONENTS: Readonly<Record<string, number>> = {
  BHD: 3,
  BIF: 0,
  CLP: 0,
  DJF: 0,
  GNF: 0,
  IQD: 3,
  ISK: 0,
  JOD: 3,
  JPY: 0,
  KMF: 0,
  KRW: 0,
  KWD: 3,
  LYD: 3,
  OMR: 3,
  PYG: 0,
  RWF: 0,
  TND: 3,
  UGX: 0,
  UYI: 0,
  VND: 0,
  VUV: 0,
  XAF: 0,
  XOF: 0,
  XPF: 0,
};

export function currencyMinorUnit(currency: string): number {
  return EXPONENTS[currency] ?? 2;
}

const KNOWN = new Set(Intl.supportedValuesOf('currency'));

/** An ISO 4217 code the runtime's ICU knows (`EUR`), not merely three capitals (`XYZ`). */
export function isCurrencyCode(code: string): boolean {
  return /^[A-Z]{3}$/.test(code) && KNOWN.has(code);
}
