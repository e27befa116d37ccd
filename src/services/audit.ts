// The audit log: who did what with keys and secrets (docs/custody.md, Audit log). Rows are only ever
// inserted, in the same transaction as the act they record when there is one, so an act and its record
// stand or fall together. Retention never prunes them.
import { randomBytes } from 'node:crypto';
import type { Ctx } from './context.js';
import type { DbOrTx } from '../store/db.js';
import { keysetPage, pageOf, type PageRequest } from './requests/pages.js';
import type { AuditEntry as AuditEntryView } from './console/types.js';

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
  | 'relayers.rotation_started'
  | 'relayers.retired'
  | 'chain.divergence_fixed';

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

export async function recordAudit(db: DbOrTx, actor: Actor, e: AuditEntry): Promise<void> {
  const now = Date.now();
  await db
    .insertInto('audit_log')
    .values({
      uid: auditUid(now),
      created_at: new Date(now).toISOString(),
      actor: actor.kind,
      actor_detail: actor.detail ?? null,
      action: e.action,
      app_uid: e.app_uid ?? null,
      user_uid: e.user_uid ?? null,
      chain_id: e.chain_id ?? null,
      details: JSON.stringify(e.details ?? {}),
    })
    .execute();
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
