/**
 * Template variables without Grafana's toolbar: each variable takes its saved current value (or,
 * with "All" or nothing chosen, all of its values), and the built-in interval variables take
 * values derived from the window and the scrape interval the way Grafana derives them.
 *
 * Glossary: the PromQL form of a value is what goes into a query (several values become the
 * regex `(a|b)`, "All" without options `.*`); the text form is what a title shows ("a, b").
 */
import type { Dashboard, TemplateVariable } from './dashboardSchema.ts';

export interface VariableValue {
  promql: string;
  text: string;
}

export interface IntervalContext {
  /** Step of range queries, seconds. */
  intervalSeconds: number;
  /** The Prometheus scrape interval, seconds. */
  scrapeIntervalSeconds: number;
  /** Length of the dashboard's time window, seconds. */
  rangeSeconds: number;
}

const ALL = '$__all';

function asList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

function regexEscape(value: string): string {
  return value.replace(/[\\^$*+?.()|[\]{}]/g, '\\$&');
}

function chosenValue(variable: TemplateVariable): VariableValue {
  if (variable.type === 'constant' || variable.type === 'textbox') {
    const query = typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? '');
    const current = asList(variable.current?.value)[0];
    const value = current ?? query;
    return { promql: value, text: value };
  }
  const options = (variable.options ?? []).flatMap((o) => asList(o.value)).filter((v) => v !== ALL);
  let chosen = asList(variable.current?.value);
  if (chosen.length === 0 && variable.type === 'custom' && typeof variable.query === 'string') {
    // A custom variable saved without a current value: its first listed value, or all of them.
    const listed = variable.query.split(',').map((v) => v.trim().split(' : ').at(-1) ?? '');
    chosen = variable.includeAll ? [ALL] : listed.slice(0, 1);
    if (options.length === 0) options.push(...listed);
  }
  if (chosen.length === 0) chosen = variable.includeAll || options.length === 0 ? [ALL] : options.slice(0, 1);
  if (chosen.includes(ALL)) {
    if (variable.allValue) return { promql: variable.allValue, text: 'All' };
    if (options.length === 0) return { promql: '.*', text: 'All' };
    chosen = options;
  }
  if (chosen.length === 1) return { promql: chosen[0]!, text: chosen[0]! };
  return { promql: `(${chosen.map(regexEscape).join('|')})`, text: chosen.join(', ') };
}

/** The value of each template variable of the dashboard, by name. */
export function dashboardVariables(dashboard: Dashboard): Map<string, VariableValue> {
  return new Map(dashboard.templating.list.map((v) => [v.name, chosenValue(v)]));
}

/** Grafana's $__rate_interval: at least four scrapes, and at least one step plus one scrape. */
export function rateIntervalSeconds(context: IntervalContext): number {
  return Math.max(context.intervalSeconds + context.scrapeIntervalSeconds, 4 * context.scrapeIntervalSeconds);
}

function builtins(context: IntervalContext): Map<string, string> {
  const interval = Math.max(1, Math.round(context.intervalSeconds));
  const range = Math.max(1, Math.round(context.rangeSeconds));
  return new Map([
    ['__interval', `${interval}s`],
    ['__interval_ms', String(interval * 1000)],
    ['__rate_interval', `${Math.ceil(rateIntervalSeconds(context))}s`],
    ['__range', `${range}s`],
    ['__range_s', String(range)],
    ['__range_ms', String(range * 1000)],
  ]);
}

/** `$name`, `${name}`, `${name:format}` and the old `[[name]]`. */
const REFERENCE = /\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]|\$(\w+)/g;

/**
 * Replaces every variable reference in `text` by its value (PromQL form in queries, text form in
 * titles). A name that is neither a dashboard variable nor a built-in is left as written.
 */
export function interpolate(
  text: string,
  variables: Map<string, VariableValue>,
  form: 'promql' | 'text',
  context?: IntervalContext,
): string {
  const fixed = context ? builtins(context) : new Map<string, string>();
  return text.replace(REFERENCE, (whole, a?: string, b?: string, c?: string) => {
    const name = a ?? b ?? c ?? '';
    const variable = variables.get(name);
    if (variable) return variable[form];
    return fixed.get(name) ?? whole;
  });
}
