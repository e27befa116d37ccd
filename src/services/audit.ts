// The audit log: who did what as the operator (docs/custody.md, Audit log). Rows are only ever
// inserted, in the same transaction as the act they record when there is one, so an act and its record
// stand or fall together. Retention never prunes them; the database refuses to change or delete them
// (migration 023), and each carries a hash over its content and the previous entry's hash, so a rewrite
// by other means is found by `verifyAudit` (`mintworks audit verify`).
import { randomBytes } from 'node:crypto';
import type { Ctx } from './context.js';
import type { DbOrTx, Tx } from '../store/db.js';
import { checkLinks, entryHash, GENESIS_HASH, type BrokenLink } from '../util/audit-chain.js';
import { keysetPage, pageOf, type PageRequest } from './requests/pages.js';
import type { AuditCheck, AuditEntry as AuditEntryView } from './operator-views.js';

/** Who acted: the operator token (management API), a console session, or the CLI on the host. */
export interface Actor {
  kind: 'operator_token' | 'console' | 'cli';
  /** What tells one actor of that kind from another: the client address, the OS user. */
  detail?: string | null;
}

export type AuditAction =
  | 'master_key.rotated'
  | 'wallet.exported'
  | 'backup.created'
  | 'backup.restored'
  | 'custody.migrated'
  | 'app.secret_rotated'
  | 'operator.signed_in'
  | 'operator.signed_out'
  | 'operator.sign_in_failed'
  | 'operator.locked_out'
  | 'relayers.rotation_started'
  | 'relayers.retired'
  | 'chain.divergence_fixed'
  | 'app.created'
  | 'app.deleted'
  | 'app.token_issued'
  | 'collection.created'
  | 'collection.updated'
  | 'webhook.created'
  | 'webhook.changed'
  | 'webhook.secret_rotated'
  | 'webhook.redelivered'
  | 'webhook.tested'
  | 'reward.created'
  | 'reward.withdrawn'
  | 'reward.allocated'
  | 'reward.claimed'
  | 'chain.tx_cancelled'
  | 'chain.resynced'
  | 'chain.funded'
  | 'config.public_url_set'
  | 'config.chains_set'
  | 'config.operator_token_set';

export interface AuditEntry {
  action: AuditAction;
  app_uid?: string | null;
  user_uid?: string | null;
  chain_id?: number | null;
  details?: Record<string, unknown>;
}

/** Time-ordered uids: entries of one millisecond still page in a stable order. */
function auditUid(now: number): string {
  return `${now.toString(36).padStart(9, '0')}${randomBytes(5).toString('hex')}`;
}

/**
 * Appends an entry to the audit chain. Within `db`'s transaction when it is one (the act and its entry
 * commit together), else in a transaction of its own. The head row is locked first (an UPDATE: a row
 * lock on PostgreSQL, SQLite's write lock), so concurrent appends from any process take turns and the
 * chain never forks. What `chain verify --fix` and any new operator act call.
 */
export async function recordAudit(db: DbOrTx, actor: Actor, e: AuditEntry): Promise<void> {
  if (db.isTransaction) return append(db as Tx, actor, e);
  await db.transaction().execute((tx) => append(tx, actor, e));
}

async function append(tx: Tx, actor: Actor, e: AuditEntry): Promise<void> {
  const head = await tx
    .updateTable('audit_head')
    .set((eb) => ({ seq: eb('seq', '+', 1) }))
    .where('id', '=', 1)
    .returning(['seq', 'hash'])
    .executeTakeFirstOrThrow();
  const now = Date.now();
  const entry = {
    seq: Number(head.seq),
    uid: auditUid(now),
    created_at: new Date(now).toISOString(),
    actor: actor.kind,
    actor_detail: actor.detail ?? null,
    action: e.action,
    app_uid: e.app_uid ?? null,
    user_uid: e.user_uid ?? null,
    chain_id: e.chain_id ?? null,
    details: JSON.stringify(e.details ?? {}),
  };
  const hash = entryHash(head.hash, entry);
  await tx
    .insertInto('audit_log')
    .values({ ...entry, prev_hash: head.hash, hash })
    .execute();
  await tx.updateTable('audit_head').set({ hash }).where('id', '=', 1).execute();
}

/**
 * `entries`: checked up to the first broken link; `head`: the last entry's seq and hash as the head
 * row records them (export them, to check against later); `broken`: the first link that does not hold.
 */
export type { AuditCheck };

/**
 * Walks the chain from the first entry: every entry in its place, following the one before, with
 * its content matching its hash, and the last one the head row's. `expectHead`: a head exported
 * earlier (seq and hash), which must still be in the chain.
 */
export async function verifyAudit(ctx: Pick<Ctx, 'db'>, expectHead?: { seq: number; hash: string }): Promise<AuditCheck> {
  const headRow = await ctx.db.selectFrom('audit_head').select(['seq', 'hash']).where('id', '=', 1).executeTakeFirst();
  const head = { seq: Number(headRow?.seq ?? 0), hash: headRow?.hash ?? GENESIS_HASH };
  const result = (broken: BrokenLink | null, entries: number): AuditCheck => ({
    ok: broken === null,
    entries,
    head,
    broken,
    checked_at: new Date().toISOString(),
  });
  if (!headRow) return result({ seq: 0, uid: null, reason: 'the audit head row is missing' }, 0);
  let pos = { seq: 0, hash: GENESIS_HASH };
  for (;;) {
    const rows = await ctx.db.selectFrom('audit_log').selectAll().where('seq', '>', pos.seq).orderBy('seq').limit(1000).execute();
    const entries = rows.map((r) => ({ ...r, seq: Number(r.seq), chain_id: r.chain_id === null ? null : Number(r.chain_id) }));
    if (expectHead && pos.seq < expectHead.seq && entries.length && entries[entries.length - 1].seq >= expectHead.seq) {
      const at = entries.find((x) => x.seq === expectHead.seq);
      if (at && at.hash !== expectHead.hash) {
        return result(
          {
            seq: expectHead.seq,
            uid: at.uid,
            reason: `entry ${expectHead.seq} (${at.uid}) is not the one exported: its hash is ${at.hash}, not ${expectHead.hash}`,
          },
          pos.seq,
        );
      }
    }
    const r = checkLinks(pos, entries);
    if (r.broken) return result(r.broken, r.broken.seq - 1);
    pos = { seq: r.seq, hash: r.hash };
    if (rows.length < 1000) break;
  }
  if (pos.seq !== head.seq || pos.hash !== head.hash) {
    return result(
      pos.seq < head.seq
        ? { seq: pos.seq + 1, uid: null, reason: `entries ${pos.seq + 1} to ${head.seq} are missing: the chain ends at ${pos.seq}, its head says ${head.seq}` }
        : { seq: pos.seq, uid: null, reason: `the chain's last entry (${pos.seq}) is not its recorded head (${head.seq}, ${head.hash})` },
      pos.seq,
    );
  }
  if (expectHead && expectHead.seq > head.seq) {
    return result(
      { seq: head.seq + 1, uid: null, reason: `entry ${expectHead.seq} was exported, but the chain ends at ${head.seq}: entries are missing` },
      pos.seq,
    );
  }
  return result(null, pos.seq);
}

/** An audit row as the API and the console show it (its details parsed). */
export function auditView(r: Omit<AuditEntryView, 'details'> & { details: string }): AuditEntryView {
  return {
    uid: r.uid,
    created_at: r.created_at,
    actor: r.actor,
    actor_detail: r.actor_detail,
    action: r.action,
    app_uid: r.app_uid,
    user_uid: r.user_uid,
    chain_id: r.chain_id === null ? null : Number(r.chain_id),
    details: JSON.parse(r.details) as Record<string, unknown>,
    seq: Number(r.seq),
    hash: r.hash,
  };
}

/** The audit log, newest first, a page at a time; optionally one action or one App only. */
export async function listAudit(ctx: Pick<Ctx, 'db'>, filter: { action?: string; app_uid?: string }, page: PageRequest = {}) {
  let q = ctx.db.selectFrom('audit_log').selectAll();
  if (filter.action) q = q.where('action', '=', filter.action);
  if (filter.app_uid) q = q.where('app_uid', '=', filter.app_uid);
  const rows = await keysetPage(q, 'audit_log', page).execute();
  return pageOf(rows, page, auditView);
}
