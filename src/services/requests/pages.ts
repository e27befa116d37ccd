// Keyset pagination for the lists of the API and the console: largest key first (the API's lists: newest
// first by (created_at, uid)), a page at a time, so a list is complete however long it gets and every
// page costs the same (an index range, never an OFFSET that reads and drops the rows before it). The
// SDKs ignore paging: a plain call answers the first page as the array they expect, and the HTTP layer
// announces the next one in a `Link` header.
import type { Expression, ExpressionBuilder, SelectQueryBuilder, SqlBool } from 'kysely';
import { ApiError } from '../../util/errors.js';
import { isUtf8 } from 'node:buffer';
import { isStorableText } from '../../domain/text.js';

/** Entries per page when the request names no `limit` (also the most a page holds). */
export const DEFAULT_PAGE_SIZE = 1000;
export const MAX_PAGE_SIZE = 1000;

export interface PageRequest {
  limit?: number;
  /** Opaque: the `cursor` of the previous page's Link header. */
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  /** The cursor of the next page, or null when this is the last. */
  next: string | null;
}

interface Position {
  created_at: string;
  uid: string;
}

/** A value of a list's key columns, as a cursor carries it. */
export type KeyValue = string | number;
/** The kind of each key column: 's' text, 'n' number. */
export type KeyKind = 's' | 'n';

/** The cursor after a row whose key columns hold `values`: base64url of their JSON array. */
export function encodeCursor(values: readonly KeyValue[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

/**
 * The key values a cursor carries, checked against the kinds of the list's key columns; anything else
 * (made up, cut short, not UTF-8, text a database cannot store) is a 400 naming the cursor. `hint` says
 * where a good cursor comes from.
 */
export function decodeCursor(cursor: string, kinds: readonly KeyKind[] = ['s', 's'], hint = 'use the one of a Link header'): KeyValue[] {
  try {
    const bytes = Buffer.from(cursor, 'base64url');
    if (!isUtf8(bytes)) throw new Error('not UTF-8'); // would decode to U+FFFD: not what was encoded
    const v = JSON.parse(bytes.toString('utf8')) as unknown;
    const fits = (x: unknown, kind: KeyKind) =>
      kind === 's' ? typeof x === 'string' && x.length <= 40 && isStorableText(x) : typeof x === 'number' && Number.isFinite(x);
    if (Array.isArray(v) && v.length === kinds.length && v.every((x, i) => fits(x, kinds[i]))) return v as KeyValue[];
  } catch {
    /* answered below */
  }
  throw ApiError.validation([{ field: 'cursor', code: 'invalid', message: `Invalid cursor: ${hint}.` }]);
}

/**
 * Rows after `values` in the descending order of `columns` (the first column first, each next one
 * breaking the ties of those before): `c1 < v1 or (c1 = v1 and (c2 < v2 or …))`, the shape the API's
 * lists have always used, whose plans the query-plan test checks on both databases.
 */
export function afterKeys<DB, TB extends keyof DB>(
  eb: ExpressionBuilder<DB, TB>,
  columns: readonly string[],
  values: readonly KeyValue[],
): Expression<SqlBool> {
  const [first, ...rest] = columns;
  const [value, ...more] = values;
  const col = first as any;
  if (rest.length === 0) return eb(col, '<', value);
  return eb.or([eb(col, '<', value), eb.and([eb(col, '=', value), afterKeys(eb, rest, more)])]);
}

/**
 * Orders `q` by its key columns, largest first, starts after the cursor, and fetches one row more than
 * the page, to know whether another page follows. `keys`: the columns (qualified) and their kinds.
 */
export function keysetPageBy<DB, TB extends keyof DB & string, O>(
  q: SelectQueryBuilder<DB, TB, O>,
  keys: { columns: readonly string[]; kinds: readonly KeyKind[]; hint?: string },
  page: PageRequest,
): SelectQueryBuilder<DB, TB, O> {
  let out = q;
  if (page.cursor) {
    const values = decodeCursor(page.cursor, keys.kinds, keys.hint);
    out = out.where((eb: ExpressionBuilder<DB, TB>) => afterKeys(eb, keys.columns, values));
  }
  for (const c of keys.columns) out = out.orderBy(c as any, 'desc');
  return out.limit(pageSize(page) + 1);
}

/**
 * The API's lists: newest first by (created_at, uid) of the table (or alias) `t`, a page after the
 * cursor, one row more than the page.
 */
export function keysetPage<DB, TB extends keyof DB & string, O>(q: SelectQueryBuilder<DB, TB, O>, t: TB, page: PageRequest): SelectQueryBuilder<DB, TB, O> {
  return keysetPageBy(q, { columns: [`${t}.created_at`, `${t}.uid`], kinds: ['s', 's'] }, page);
}

/**
 * The page out of the rows a keyset read fetched (one more than the page), with the cursor after its
 * last row: `keyOf` gives a row's key values (default: created_at and uid).
 */
export function pageOf<R, T>(
  rows: R[],
  page: PageRequest,
  view: (r: R) => T,
  keyOf: (r: R) => KeyValue[] = (r) => [(r as unknown as Position).created_at, (r as unknown as Position).uid],
): Page<T> {
  const limit = pageSize(page);
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  return { items: kept.map(view), next: more ? encodeCursor(keyOf(kept[kept.length - 1])) : null };
}

/** The rows a page holds: its `limit`, within the API's bounds. */
export function pageSize(page: PageRequest): number {
  return Math.min(Math.max(1, page.limit ?? DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE);
}
