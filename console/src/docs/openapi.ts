// The parts of an OpenAPI 3 document that the reference shows, and the reading of its schemas:
// references resolved, types named as a reader says them ("string or null", "array of Asset").

export interface Schema {
  $ref?: string;
  type?: string;
  format?: string;
  description?: string;
  nullable?: boolean;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  default?: unknown;
  example?: unknown;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  description?: string;
  schema?: Schema;
}

export interface MediaType {
  schema?: Schema;
  example?: unknown;
}

export interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, MediaType> };
  responses?: Record<string, { description?: string; content?: Record<string, MediaType> }>;
  security?: Record<string, string[]>[];
}

export interface SecurityScheme {
  type: string;
  in?: string;
  name?: string;
  scheme?: string;
  bearerFormat?: string;
  description?: string;
}

export interface Document {
  info: { title: string; version: string; description?: string };
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema>; securitySchemes?: Record<string, SecurityScheme> };
  security?: Record<string, string[]>[];
}

export const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export interface Endpoint {
  id: string;
  method: string;
  path: string;
  op: Operation;
}

export interface Group {
  id: string;
  title: string;
  endpoints: Endpoint[];
}

const TITLES: Record<string, string> = { admin: 'Apps' };
const title = (tag: string) => TITLES[tag] ?? tag.charAt(0).toUpperCase() + tag.slice(1);

/**
 * The endpoints grouped as a reader looks for them: the App API (/v1) by resource, then the
 * management API (/admin/v1) by subject, each in the document's order.
 */
export function groups(doc: Document): Group[] {
  const byKey = new Map<string, Group>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const management = path.startsWith('/admin/');
      const tags = (op.tags ?? ['other']).filter((t) => !(management && t === 'admin'));
      const tag = tags[0] ?? 'admin';
      const key = `${management ? 'admin' : 'v1'}-${tag}`;
      if (!byKey.has(key)) byKey.set(key, { id: key, title: management ? `Management: ${title(tag)}` : title(tag), endpoints: [] });
      byKey.get(key)!.endpoints.push({ id: op.operationId ?? `${method}-${path}`.replace(/[^\w-]+/g, '-'), method, path, op });
    }
  }
  return [...byKey.values()];
}

export const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);

/** The schema a reference points to (one level: component schemas refer to each other by name only). */
export function resolve(doc: Document, s: Schema | undefined): Schema | undefined {
  if (!s?.$ref) return s;
  return doc.components?.schemas?.[refName(s.$ref)];
}

/** A schema's type in words: `string`, `integer or null`, `array of Asset`, `Asset`. */
export function typeName(s: Schema | undefined): string {
  if (!s) return 'any';
  if (s.$ref) return refName(s.$ref);
  const alternatives = s.anyOf ?? s.oneOf;
  let name: string;
  if (alternatives) name = alternatives.map(typeName).join(' or ');
  else if (s.allOf?.length === 1) name = typeName(s.allOf[0]);
  else if (s.type === 'array') name = `array of ${typeName(s.items)}`;
  else if (s.type === 'object' && !s.properties) name = 'object';
  else name = s.type ?? 'any';
  return s.nullable ? `${name} or null` : name;
}

/** What a value must be beyond its type: its values, bounds and lengths. */
export function constraints(s: Schema | undefined): string[] {
  if (!s) return [];
  const out: string[] = [];
  if (s.enum) out.push(`one of ${s.enum.map((v) => JSON.stringify(v)).join(', ')}`);
  if (s.minLength !== undefined && s.maxLength !== undefined) out.push(`${s.minLength}–${s.maxLength} characters`);
  else if (s.maxLength !== undefined) out.push(`at most ${s.maxLength} characters`);
  else if (s.minLength !== undefined && s.minLength > 0) out.push(`at least ${s.minLength} characters`);
  const safe = (n: number) => Math.abs(n) < Number.MAX_SAFE_INTEGER;
  if (s.minimum !== undefined && s.maximum !== undefined && safe(s.minimum) && safe(s.maximum)) out.push(`${s.minimum} to ${s.maximum}`);
  else if (s.minimum !== undefined && safe(s.minimum)) out.push(`at least ${s.minimum}`);
  else if (s.maximum !== undefined && safe(s.maximum)) out.push(`at most ${s.maximum}`);
  if (s.format) out.push(s.format);
  if (s.default !== undefined) out.push(`default ${JSON.stringify(s.default)}`);
  return out;
}

/** The success answer's `data` (the envelope around it is the same for every route). */
export function successData(doc: Document, op: Operation): { status: string; schema: Schema | undefined } | null {
  for (const [status, r] of Object.entries(op.responses ?? {})) {
    if (!status.startsWith('2')) continue;
    const body = resolve(doc, r.content?.['application/json']?.schema);
    return { status, schema: body?.properties?.data ?? body };
  }
  return null;
}
