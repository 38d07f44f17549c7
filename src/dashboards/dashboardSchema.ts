/**
 * The parts of a Grafana dashboard JSON (schemaVersion 39) that our renderer reads, as one zod
 * schema. Everything else in the file (links, annotations, plugin options we do not draw) is
 * ignored, so a dashboard Grafana accepts parses here too.
 *
 * Glossary: a panel is one box on the 24-column grid (`gridPos`, in columns and rows of 30 px);
 * a target is one query of a panel (`expr`, its `refId`, the `legendFormat` naming each series);
 * a template variable is a `$name` the queries refer to, chosen in Grafana's toolbar.
 */
import { z } from 'zod';

const gridPos = z.object({
  x: z.number().int().min(0),
  y: z.number().int().min(0),
  w: z.number().int().min(1).max(24),
  h: z.number().int().min(1),
});

const target = z.object({
  refId: z.string().default('A'),
  expr: z.string().optional(),
  legendFormat: z.string().optional(),
  /** Grafana's "Instant" switch. */
  instant: z.boolean().optional(),
  hide: z.boolean().optional(),
  datasource: z
    .union([z.object({ type: z.string().optional(), uid: z.string().optional() }), z.string()])
    .optional(),
});

const thresholdStep = z.object({
  color: z.string(),
  /** null is the base step: everything below the first number. */
  value: z.number().nullable(),
});

const fieldDefaults = z.object({
  unit: z.string().optional(),
  decimals: z.number().int().min(0).max(20).optional(),
  min: z.number().optional(),
  max: z.number().optional(),
  thresholds: z
    .object({ mode: z.enum(['absolute', 'percentage']).default('absolute'), steps: z.array(thresholdStep) })
    .optional(),
});

const panelOptions = z.object({
  reduceOptions: z.object({ calcs: z.array(z.string()).optional() }).optional(),
  colorMode: z.string().optional(),
  textMode: z.string().optional(),
  legend: z.object({ showLegend: z.boolean().optional(), displayMode: z.string().optional() }).optional(),
});

const basePanel = z.object({
  id: z.number().int().optional(),
  type: z.string(),
  title: z.string().default(''),
  description: z.string().optional(),
  gridPos,
  targets: z.array(target).default([]),
  fieldConfig: z.object({ defaults: fieldDefaults.default({}) }).default({ defaults: {} }),
  options: panelOptions.default({}),
});

const panel = basePanel.extend({
  /** A collapsed row keeps its panels inside it. */
  panels: z.array(basePanel).optional(),
});

const variableValue = z.union([z.string(), z.array(z.string())]);

const variable = z.object({
  name: z.string(),
  type: z.string(),
  label: z.string().optional(),
  current: z.object({ value: variableValue.optional(), text: variableValue.optional() }).optional(),
  query: z.union([z.string(), z.object({ query: z.string().optional() })]).optional(),
  options: z.array(z.object({ value: variableValue, selected: z.boolean().optional() })).optional(),
  includeAll: z.boolean().optional(),
  allValue: z.string().nullable().optional(),
  multi: z.boolean().optional(),
});

export const dashboardSchema = z.object({
  title: z.string(),
  description: z.string().optional(),
  timezone: z.string().optional(),
  time: z.object({ from: z.string(), to: z.string() }).optional(),
  templating: z.object({ list: z.array(variable).default([]) }).default({ list: [] }),
  panels: z.array(panel).default([]),
});

export type Dashboard = z.infer<typeof dashboardSchema>;
export type Panel = z.infer<typeof basePanel>;
export type Target = z.infer<typeof target>;
export type FieldDefaults = z.infer<typeof fieldDefaults>;
export type ThresholdStep = z.infer<typeof thresholdStep>;
export type TemplateVariable = z.infer<typeof variable>;

/** Parses dashboard JSON; the error names the path of each field that does not fit. */
export function parseDashboard(json: unknown): Dashboard {
  const parsed = dashboardSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  throw new Error(`not a Grafana dashboard we can render: ${problems.join('; ')}`);
}

export interface PlacedPanel {
  /** The key of the panel's query results: its id, or its position when it has none. */
  key: string;
  panel: Panel;
}

/** Every panel to draw, rows' collapsed panels included (drawn expanded), in file order. */
export function dashboardPanels(dashboard: Dashboard): PlacedPanel[] {
  const flat = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  return flat.map((panel, i) => ({ key: panel.id === undefined ? `#${i}` : String(panel.id), panel }));
}
