import type { z } from 'zod';

/** Every route of the read API is under this prefix (a new major version gets another). */
export const API_PREFIX = '/api/v1';

/** What a handler returns for an unknown id: a 404 with this reason. */
export class NotFound {
  constructor(readonly reason: string) {}
}

/**
 * One GET route of the read API: its path (OpenAPI style, `{id}`, under API_PREFIX), the schemas
 * it validates its params and query with, and the schema of its 200 answer, which types what the
 * handler returns: the document (openapi.ts) is generated from the same three.
 */
export interface ApiRoute<
  P extends z.ZodObject | undefined,
  Q extends z.ZodObject | undefined,
  R extends z.ZodType,
> {
  path: string;
  operationId: string;
  summary: string;
  description: string;
  params: P;
  query: Q;
  response: R;
  okDescription: string;
  /** When the route answers 404 (an unknown id); undefined when it never does. */
  notFound?: string;
  handle(input: {
    params: P extends z.ZodObject ? z.output<P> : undefined;
    query: Q extends z.ZodObject ? z.output<Q> : undefined;
  }): Promise<z.output<R> | NotFound>;
}

export type AnyApiRoute = ApiRoute<z.ZodObject | undefined, z.ZodObject | undefined, z.ZodType>;

/** Checks a route's handler against its schemas, then forgets their types (a list holds any route). */
export function defineRoute<
  P extends z.ZodObject | undefined,
  Q extends z.ZodObject | undefined,
  R extends z.ZodType,
>(route: ApiRoute<P, Q, R>): AnyApiRoute {
  return route as unknown as AnyApiRoute;
}
