// Idempotency-Key: the first successful answer to a POST/PUT that carried a key is stored
// in the SAME transaction as the operation it answers, so either both exist or neither does: a retry
// after a crash, a timeout or a lost answer finds the operation done and gets its answer again, never a
// second operation. Failed requests change nothing and store nothing, so retrying one runs it again.
import { createHash } from 'node:crypto';
import type { DbOrTx } from '../../store/db.js';
import { stringifyExact } from '../../domain/exact-json.js';

/** An answer is replayed for this long after it was stored; then the key may be used afresh. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/** What a service needs to store its answer: the route fills it in, the service writes it in its transaction. */
export interface IdempotentWrite {
  appUid: string;
  key: string;
  fingerprint: string;
  /** The success status the route answers with (201 for creates, 200 otherwise). */
  status: number;
  now: number;
}

export interface StoredAnswer {
  fingerprint: string;
  status: number;
  body: string;
}

/**
 * Thrown inside the operation's transaction when a live answer exists under the key (another request
 * with the same key committed first, possibly in another process): the operation is rolled back and
 * the route answers from the stored answer instead.
 */
export class IdempotencyConflict extends Error {
  constructor() {
    super('an answer is already stored under this Idempotency-Key');
  }
}

/** Identifies "the same request": method, route, path parameters and the exact body text. */
export function fingerprint(method: string, route: string, params: unknown, body: string): string {
  return createHash('sha256')
    .update(`${method} ${route} ${JSON.stringify(params ?? {})}\n`)
    .update(body)
    .digest('hex');
}

/** The answer body exactly as the route sends it (fastify serializes with JSON.stringify). */
export function answerBody(data: unknown): string {
  return stringifyExact({ success: true, data });
}

export async function saveAnswer(tx: DbOrTx, w: IdempotentWrite | undefined, data: unknown): Promise<void> {
  if (w) await saveAnswers(tx, [{ w, data }]);
}

/**
 * Stores answers (one statement). A stored answer that has expired gives way to the new one; a live one
 * does not, and then IdempotencyConflict is thrown, which rolls the caller's transaction back. On
 * PostgreSQL a concurrent uncommitted insert of the same key makes this wait for it to end.
 */
export async function saveAnswers(tx: DbOrTx, items: { w: IdempotentWrite; data: unknown }[]): Promise<void> {
  if (items.length === 0) return;
  const cutoff = Math.min(...items.map((i) => i.w.now)) - IDEMPOTENCY_TTL_MS;
  const rows = items.map(({ w, data }) => ({
    app_uid: w.appUid,
    idem_key: w.key,
    fingerprint: w.fingerprint,
    status_code: w.status,
    response: answerBody(data),
    created_at_ms: w.now,
  }));
  const written = await tx
    .insertInto('idempotency_keys')
    .values(rows)
    .onConflict((oc) =>
      oc
        .columns(['app_uid', 'idem_key'])
        .doUpdateSet({
          fingerprint: (eb) => eb.ref('excluded.fingerprint'),
          status_code: (eb) => eb.ref('excluded.status_code'),
          response: (eb) => eb.ref('excluded.response'),
          created_at_ms: (eb) => eb.ref('excluded.created_at_ms'),
        })
        .where('idempotency_keys.created_at_ms', '<', cutoff),
    )
    .returning('idem_key')
    .execute();
  if (written.length !== rows.length) throw new IdempotencyConflict();
}

/** The live answer stored under an App's key, if any. */
export async function findAnswer(db: DbOrTx, appUid: string, key: string, now: number): Promise<StoredAnswer | null> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['fingerprint', 'status_code', 'response'])
    .where('app_uid', '=', appUid)
    .where('idem_key', '=', key)
    .where('created_at_ms', '>=', now - IDEMPOTENCY_TTL_MS)
    .executeTakeFirst();
  return row ? { fingerprint: row.fingerprint, status: row.status_code, body: row.response } : null;
}

/** Deletes expired answers; returns how many. */
export async function sweepAnswers(db: DbOrTx, now: number): Promise<number> {
  const r = await db
    .deleteFrom('idempotency_keys')
    .where('created_at_ms', '<', now - IDEMPOTENCY_TTL_MS)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
