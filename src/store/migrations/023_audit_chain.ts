import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';
import { entryHash, GENESIS_HASH, type ChainedEntry } from '../../util/audit-chain.js';

/**
 * The audit log becomes tamper-evident (docs/custody.md, Audit log):
 * - `audit_log.seq`, `prev_hash`, `hash`: each entry's place in the chain, the hash of the entry
 *   before it and its own hash over its content and that one (util/audit-chain.ts). The entries
 *   already written are chained here, oldest first.
 * - `audit_head`: one row, the last entry's seq and hash. Appending locks it first (an UPDATE: a row
 *   lock on PostgreSQL, the write lock on SQLite), so two processes appending at once never fork the
 *   chain; and an entry removed at the end no longer matches it.
 * - Triggers refuse UPDATE and DELETE on `audit_log` (and TRUNCATE on PostgreSQL), and DELETE of the head.
 */
export function auditChain(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('audit_log').addColumn('seq', 'integer').execute();
      await db.schema.alterTable('audit_log').addColumn('prev_hash', 'text').execute();
      await db.schema.alterTable('audit_log').addColumn('hash', 'text').execute();
      const rows = await db.selectFrom('audit_log').selectAll().orderBy('created_at').orderBy('uid').execute();
      let prev = GENESIS_HASH;
      let seq = 0;
      for (const r of rows) {
        seq += 1;
        const entry = { ...(r as ChainedEntry), seq, chain_id: r.chain_id === null ? null : Number(r.chain_id) };
        const hash = entryHash(prev, entry);
        await db.updateTable('audit_log').set({ seq, prev_hash: prev, hash }).where('uid', '=', r.uid).execute();
        prev = hash;
      }
      await db.schema.createIndex('audit_log_seq_idx').on('audit_log').column('seq').unique().execute();
      await db.schema
        .createTable('audit_head')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('hash', 'text', (c) => c.notNull())
        .execute();
      await db.insertInto('audit_head').values({ id: 1, seq, hash: prev }).execute();

      if (dialect === 'sqlite') {
        for (const [name, on, what] of [
          ['audit_log_no_update', 'update on audit_log', 'audit_log is append-only: its entries cannot be changed'],
          ['audit_log_no_delete', 'delete on audit_log', 'audit_log is append-only: its entries cannot be deleted'],
          ['audit_head_no_delete', 'delete on audit_head', 'audit_head cannot be deleted'],
        ]) {
          await sql.raw(`create trigger ${name} before ${on} begin select raise(abort, '${what}'); end`).execute(db);
        }
      } else {
        await sql`
          create function mintworks_audit_append_only() returns trigger language plpgsql as $$
          begin
            raise exception '% is append-only: % refused', tg_table_name, tg_op using errcode = 'insufficient_privilege';
          end $$`.execute(db);
        await sql`create trigger audit_log_append_only before update or delete on audit_log for each row execute function mintworks_audit_append_only()`.execute(
          db,
        );
        await sql`create trigger audit_log_no_truncate before truncate on audit_log for each statement execute function mintworks_audit_append_only()`.execute(
          db,
        );
        await sql`create trigger audit_head_no_delete before delete on audit_head for each row execute function mintworks_audit_append_only()`.execute(db);
        await sql`create trigger audit_head_no_truncate before truncate on audit_head for each statement execute function mintworks_audit_append_only()`.execute(
          db,
        );
      }
    },
  };
}

/**
 * Failed operator-token attempts, shared by every process (http/kit/operator-attempts.ts): one row per
 * scope (`ip:<address or IPv6 /64>`, `global`), a fixed window each. Rows of ended windows are removed;
 * a window in progress never is, whatever the number of rows.
 */
export function operatorAttempts(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('operator_attempts')
        .addColumn('scope', 'text', (c) => c.primaryKey())
        .addColumn('window_start', 'bigint', (c) => c.notNull())
        .addColumn('failures', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('operator_attempts_window_idx').on('operator_attempts').column('window_start').execute();
    },
  };
}
