// Keyset pagination for the lists of the API: newest first by (created_at, uid), a page at a time, so a
// list is complete however long it gets and every page costs the same (an index range, never an
// OFFSET that reads and drops the rows before it). The SDKs ignore paging: a plain call answers the
// first page as the array they expect, and the HTTP layer announces the next one in a `Link` header.
import { type ExpressionBuilder, type SelectQueryBuilder } from 'kysely';
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

export function encodeCursor(p: Position): string {
  return Buffer.from(JSON.stringify([p.created_at, p.uid])).toString('base64url');
}

export function decodeCursor(cursor: string): Position {
  try {
    const bytes = Buffer.from(cursor, 'base64url');
    if (!isUtf8(bytes)) throw new Error('not UTF-8'); // would decode to U+FFFD: not what was encoded
    const [created_at, uid] = JSON.parse(bytes.toString('utf8')) as unknown[];
    if (typeof created_at === 'string' && typeof uid === 'string' && created_at.length <= 40 && uid.length <= 40 && isStorableText(created_at) && isStorableText(uid)) return { created_at, uid };
  } catch {
    /* answered below */
  }
  throw ApiError.validation([{ field: 'cursor', code: 'invalid', message: 'Invalid cursor: use the one of a Link header.' }]);
}

/**
 * Orders `q` newest first, starts after the cursor and fetches one row more than the page, to know
 * whether another page follows. `t` is the table (or alias) whose created_at and uid are the keys.
 */
export function keysetPage<DB, TB extends keyof DB & string, O>(q: SelectQueryBuilder<DB, TB, O>, t: TB, page: PageRequest): SelectQueryBuilder<DB, TB, O> {
  const limit = pageSize(page);
  const createdAt = `${t}.created_at` as any;
  const uid = `${t}.uid` as any;
  let out = q;
  if (page.cursor) {
    const c = decodeCursor(page.cursor);
    out = out.where((eb: ExpressionBuilder<DB, TB>) => eb.or([eb(createdAt, '<', c.created_at), eb.and([eb(createdAt, '=', c.created_at), eb(uid, '<', c.uid)])]));
  }
  return out.orderBy(createdAt, 'desc').orderBy(uid, 'desc').limit(limit + 1);
}

/** The page out of the rows `keysetPage` fetched. */
export function pageOf<R extends Position, T>(rows: R[], page: PageRequest, view: (r: R) => T): Page<T> {
  const limit = pageSize(page);
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  return { items: kept.map(view), next: more ? encodeCursor(kept[kept.length - 1]) : null };
}

function pageSize(page: PageRequest): number {
  return Math.min(Math.max(1, page.limit ?? DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE);
}
