import { z } from 'zod';
import { type AnyApiRoute, API_PREFIX } from './route.ts';
import { apiSchemas, errorResponse } from './schemas.ts';

type Json = Record<string, unknown>;

const DIALECT = 'https://json-schema.org/draft/2020-12/schema';
const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/**
 * The OpenAPI 3.1 document of the read API, generated from the zod schemas the routes validate
 * with and whose output types their handlers return (zod's JSON Schema 2020-12, which is what an
 * OpenAPI 3.1 Schema Object is): response schemas are the components, params and query fields are
 * converted one by one as their input (what travels in the URL).
 */
export function buildOpenApiDocument(routes: readonly AnyApiRoute[], version: string): Json {
  const { schemas } = z.toJSONSchema(apiSchemas, {
    target: 'draft-2020-12',
    io: 'output',
    uri: (id) => `#/components/schemas/${id}`,
  });
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const errorId = idOf(errorResponse);
    const error = (description: string) => ({
      description,
      content: { 'application/json': { schema: ref(errorId) } },
    });
    const parameters = [...fields(route.params, 'path'), ...fields(route.query, 'query')];
    const responses: Json = {
      '200': {
        description: route.okDescription,
        content: { 'application/json': { schema: ref(idOf(route.response)) } },
      },
    };
    responses['400'] = error('a parameter is missing, unknown, given twice or not valid');
    responses['401'] = {
      ...error('no API token, or a wrong one'),
      headers: { 'WWW-Authenticate': { schema: { type: 'string' }, description: 'Bearer' } },
    };
    if (route.notFound) responses['404'] = error(route.notFound);
    responses['500'] = error('an internal error; the request can be retried');
    paths[`${API_PREFIX}${route.path}`] = {
      get: {
        operationId: route.operationId,
        summary: route.summary,
        description: route.description,
        ...(parameters.length > 0 ? { parameters } : {}),
        responses,
      },
    };
  }
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: DIALECT,
    info: {
      title: 'stablebooks read API',
      version,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      description:
        'Read-only: intents, payouts, balances, findings and ledger entries, on the operations port, ' +
        'behind `Authorization: Bearer <API_TOKEN>`. Money is never a JSON number: base units are ' +
        'integer strings, decimal amounts decimal strings.',
    },
    servers: [{ url: '/', description: "the daemon's operations port (OPS_HOST:OPS_PORT)" }],
    security: [{ apiToken: [] }],
    paths,
    components: {
      securitySchemes: { apiToken: { type: 'http', scheme: 'bearer', description: 'API_TOKEN' } },
      schemas: Object.fromEntries(Object.entries(schemas).map(([id, s]) => [id, bare(s as Json)])),
    },
  };
}

function idOf(schema: z.ZodType): string {
  const id = apiSchemas.get(schema)?.id;
  if (!id) throw new Error('read API: a response schema is not registered in apiSchemas');
  return id;
}

/** One parameter object per field of a params or query schema, converted as its input. */
function fields(schema: z.ZodObject | undefined, where: 'path' | 'query'): Json[] {
  if (!schema) return [];
  return Object.entries(schema.shape).map(([name, field]) => {
    const json = bare(z.toJSONSchema(field as z.ZodType, { target: 'draft-2020-12', io: 'input' }) as Json);
    const { description, ...rest } = json;
    return {
      name,
      in: where,
      required: where === 'path' || !(field as z.ZodType).safeParse(undefined).success,
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

/** A schema without `$schema` and `$id`: the document's jsonSchemaDialect says the dialect. */
function bare(schema: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}
