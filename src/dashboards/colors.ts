/**
 * Grafana's dark-theme colours: the named colours of thresholds and the classic palette its
 * time series take in turn. A colour from a dashboard goes into a style attribute, so only names
 * we know and plain hex or rgb() values pass; anything else is drawn in the text colour.
 */
import type { ThresholdStep } from './dashboardSchema.ts';

export const THEME = {
  page: '#111217',
  panel: '#181b1f',
  border: '#2c3235',
  text: '#ccccdc',
  weak: '#8e8e9e',
  grid: '#2a2d33',
  error: '#f2495c',
};

const NAMED: Record<string, string> = {
  green: '#73bf69',
  'semi-dark-green': '#56a64b',
  'dark-green': '#37872d',
  'light-green': '#96d98d',
  red: '#f2495c',
  'semi-dark-red': '#e02f44',
  'dark-red': '#c4162a',
  'light-red': '#ff7383',
  orange: '#ff9830',
  'semi-dark-orange': '#ff780a',
  'dark-orange': '#fa6400',
  'light-orange': '#ffb357',
  yellow: '#fade2a',
  'semi-dark-yellow': '#f2cc0c',
  'dark-yellow': '#e0b400',
  'light-yellow': '#fff899',
  blue: '#5794f2',
  'semi-dark-blue': '#3274d9',
  'dark-blue': '#1f60c4',
  'light-blue': '#8ab8ff',
  purple: '#b877d9',
  'semi-dark-purple': '#a352cc',
  'dark-purple': '#8f3bb8',
  'light-purple': '#ca95e5',
  text: THEME.text,
  transparent: 'transparent',
};

/** Grafana's classic palette, in the order series take it. */
export const SERIES_PALETTE = [
  '#73bf69',
  '#f2cc0c',
  '#8ab8ff',
  '#ff780a',
  '#f2495c',
  '#5794f2',
  '#b877d9',
  '#705da0',
  '#37872d',
  '#fade2a',
  '#447ebc',
  '#c15c17',
];

export function cssColor(name: string): string {
  const known = NAMED[name.toLowerCase()];
  if (known) return known;
  if (/^#[0-9a-f]{3,8}$/i.test(name)) return name;
  if (/^rgba?\(\s*[\d.\s,%]+\)$/i.test(name)) return name;
  return THEME.text;
}

/** A stat panel without thresholds gets Grafana's default ones: green, red from 80. */
export const DEFAULT_THRESHOLDS: ThresholdStep[] = [
  { color: 'green', value: null },
  { color: 'red', value: 80 },
];

/** The colour of the highest step at or below `value` (absolute thresholds). */
export function thresholdColor(steps: ThresholdStep[], value: number): string {
  const ordered = [...steps].sort(
    (a, b) => (a.value ?? Number.NEGATIVE_INFINITY) - (b.value ?? Number.NEGATIVE_INFINITY),
  );
  let color = ordered[0]?.color ?? 'text';
  for (const step of ordered) {
    if (step.value === null || value >= step.value) color = step.color;
  }
  return cssColor(color);
}
