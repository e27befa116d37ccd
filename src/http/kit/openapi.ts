// How /openapi.json documents each route beyond its request schema: a summary, a description, the answer
// of every status it gives (the success in the `{success, data}` envelope, each failure in the error
// envelope) with examples, and the security scheme (the App's key and token under /v1, the operator token
// under /admin/v1). Each route module declares its routes' docs beside them (a RouteDoc each, with the
// objects of ./objects.ts); documentArea joins them to the routes as they are registered, and refuses a
// route without one, so the document and the routes cannot differ. test/integration/openapi.test.ts
// validates the document and checks real answers against these schemas.
import type { FastifyInstance, RouteOptions } from 'fastify';
import { createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { stringifyExact } from '../../domain/exact-json.js';

// ------------------------------------------------------------------------------------- envelopes

const ok = (data: z.ZodType) => z.object({ success: z.literal(true), data });

const errorDetail = z.object({ code: z.string(), field_name: z.string().optional(), message: z.string() }).meta({ id: 'ErrorDetail' });
export const errorEnvelope = z
  .object({
    success: z.literal(false),
    error: z.object({
      type: z.enum(['client_error', 'validation_error', 'server_error']),
      detail: z.union([errorDetail, z.array(errorDetail)]).describe('One detail, or one per field for a validation error; `message` is always the last key.'),
    }),
  })
  .meta({ id: 'Error' });

/** The examples of the failures, by their description: put beside the shared `Error` schema by namedSchemas. */
const failureExamples = new Map<string, unknown>();

/** A documented failure: its own description and example, the one `Error` schema (a `$ref` in the document). */
function failure(description: string, code: string, message: string, type = 'client_error', field?: string) {
  failureExamples.set(description, { success: false, error: { type, detail: field ? { code, field_name: field, message } : { code, message } } });
  return { description, content: { 'application/json': { schema: errorEnvelope } } };
}
type Failure = ReturnType<typeof failure>;

const ERRORS = {
  400: failure('Invalid request: a validation error names each field', 'required', 'This field is required.', 'validation_error', 'email'),
  401: failure('Missing or wrong credentials', 'unauthorized', 'Authentication credentials were not provided.'),
  404: failure('Unknown object (or path)', 'not_found', 'Not found.'),
  409: failure('The same Idempotency-Key is still being answered', 'idempotency_key_in_use', 'A request with this Idempotency-Key is in progress.'),
  415: failure('The body is not JSON', 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.'),
  422: failure('The Idempotency-Key was used with another request', 'idempotency_key_reused', 'This Idempotency-Key was used with a different request.'),
  429: failure('Over the rate limit (see x-ratelimit-* and retry-after)', 'rate_limited', 'Request was throttled.'),
} as const;
const ADMIN_401 = failure('Missing or wrong operator token', 'unauthorized', 'Operator token required (Authorization: Bearer <OPERATOR_TOKEN>).');

// ---------------------------------------------------------------------------------------- routes

interface RouteDoc {
  /** Stable, camelCase: client generators name their methods after it. */
  operationId: string;
  summary: string;
  description?: string;
  /** The success: status and data. */
  status?: 200 | 201;
  data: z.ZodType;
  /** Error statuses beyond the area's defaults (see responses()). */
  errors?: (keyof typeof ERRORS)[];
  /** A second success status (PUT webhook: 201 when created, 200 when changed). */
  alsoOk?: 200 | 201;
}

/** The documented answers of a route: its success and the failures its area can give. */
function responses(method: string, url: string, doc: RouteDoc): Record<number, z.ZodType | Failure> {
  const r: Record<number, z.ZodType | Failure> = { [doc.status ?? 200]: ok(doc.data).describe(doc.summary) };
  if (doc.alsoOk) r[doc.alsoOk] = ok(doc.data).describe(doc.summary);
  if (url.startsWith('/admin/')) {
    r[400] = ERRORS[400];
    r[401] = ADMIN_401;
    r[404] = ERRORS[404];
  } else {
    for (const s of [400, 401, 404, 429] as const) r[s] = ERRORS[s];
    if (method === 'POST' || method === 'PUT') for (const s of [409, 415, 422] as const) r[s] = ERRORS[s];
  }
  for (const s of doc.errors ?? []) r[s] = ERRORS[s];
  return r;
}

/** A route module's docs, keyed `METHOD /path` under its area's prefix (`GET /user/:uid`). */
export type RouteDocs = Record<string, RouteDoc>;

/** An area's docs keyed by the routes' whole paths (`GET /v1/user/:uid`), as the document and onRoute name them. */
export function areaDocs(prefix: string, ...modules: RouteDocs[]): Readonly<RouteDocs> {
  const all: RouteDocs = {};
  for (const docs of modules)
    for (const [key, doc] of Object.entries(docs)) {
      const [method, path] = key.split(' ');
      all[`${method} ${prefix}${path}`] = doc;
    }
  return all;
}

/**
 * Joins an area's docs to its routes as they are registered: call at the top of the area's scope, before
 * any route. A route registered there without a doc fails to register (the server does not start), so
 * the document can never leave a route out; the HEAD twin Fastify adds to each GET is documented by its GET.
 */
export function documentArea(scope: FastifyInstance<any, any, any, any, any>, docs: Readonly<RouteDocs>): void {
  scope.addHook('onRoute', (route: RouteOptions) => {
    const method = Array.isArray(route.method) ? route.method[0] : route.method;
    if (method === 'HEAD') return;
    const doc = docs[`${method} ${route.url}`];
    if (!doc) throw new Error(`${method} ${route.url} has no doc: declare its answers in its route module's docs (a RouteDoc, src/http/kit/openapi.ts)`);
    const admin = route.url.startsWith('/admin/');
    route.schema = {
      ...(route.schema ?? {}),
      operationId: doc.operationId,
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      response: responses(method, route.url, doc),
      ...(admin ? { security: [{ operatorToken: [] }] } : {}),
    };
  });
}

/**
 * Replies are serialised by JSON.stringify (the response schemas document; they never reshape an
 * answer), with amounts written as their exact literals (domain/exact-json.ts): call before any route.
 */
export function exactJsonReplies(app: FastifyInstance<any, any, any, any, any>): void {
  app.setSerializerCompiler(() => (data: unknown) => stringifyExact(data));
  app.setReplySerializer((data: unknown) => stringifyExact(data));
}

/** The document's head: what the API is, how to authenticate, where the rest is explained. */
export const OPENAPI_INFO = {
  title: 'Mintworks API',
  version: '1.0.0',
  description:
    'Self-hosted asset minting: users with custodial wallets, ERC-721 assets, ERC-20 rewards, signed webhooks. ' +
    "`/v1`: every request carries `X-API-KEY` and `Authorization: Bearer <token>`, an HS256 JWT signed with the App's API secret " +
    '(`mintworks token --app <uid>` makes one). `/admin/v1`: `Authorization: Bearer <OPERATOR_TOKEN>`. ' +
    'Successes answer `{"success": true, "data": …}`, failures `{"success": false, "error": {"type", "detail"}}`. ' +
    'Request, response and error examples, the token recipe and webhook verification: docs/api.md in the repository.',
};

export const SECURITY_SCHEMES = {
  apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY', description: "The App's API key" },
  bearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: "HS256 JWT signed with the App's API secret (claims are not checked beyond exp)",
  },
  operatorToken: { type: 'http', scheme: 'bearer', description: 'OPERATOR_TOKEN (or DATA_DIR/operator.token): the management API /admin/v1' },
} as const;

const withComponents = createJsonSchemaTransformObject({});

/**
 * The document with the named objects (`.meta({ id })` above) under `components.schemas`, which the
 * routes' answers reference, so generated clients get an `Asset` or `User` type to import. The
 * provider also registers an `…Input` twin of each for request bodies; the requests here are not named
 * objects, so the twins nothing references are left out.
 */
export const namedSchemas: typeof withComponents = (document) => {
  const doc = withComponents(document) as { components?: { schemas?: Record<string, unknown> } };
  const schemas = doc.components?.schemas;
  for (const ops of Object.values((doc as { paths?: Record<string, Record<string, { responses?: Record<string, any> }>> }).paths ?? {})) {
    for (const op of Object.values(ops)) {
      for (const answer of Object.values(op.responses ?? {})) {
        const example = failureExamples.get(answer?.description);
        if (example && answer.content?.['application/json']) answer.content['application/json'].example = example;
      }
    }
  }
  for (let dropped = true; schemas && dropped; ) {
    dropped = false;
    for (const name of Object.keys(schemas).filter((n) => n.endsWith('Input'))) {
      const { [name]: _self, ...others } = schemas;
      const text = JSON.stringify({ ...doc, components: { ...doc.components, schemas: others } });
      if (!text.includes(`"#/components/schemas/${name}"`)) dropped = delete schemas[name];
    }
  }
  return doc as ReturnType<typeof withComponents>;
};
