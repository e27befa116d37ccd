import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/** Must equal domain/email.ts emailKey: kept here so this migration never changes with it. */
const emailKey = (email: string) => email.toLowerCase();

/**
 * - `rate_limits`: one fixed-window request counter per bucket (an API key, a client address), shared
 *   by every API process; updated with one upsert per flush (src/services/requests/rate-limits.ts).
 * - `idempotency_keys`: the first answer to a POST/PUT with an Idempotency-Key, per App, written in the
 *   same transaction as the operation it answers (src/services/requests/idempotency.ts).
 * - `users.email_key`: the email in lower case, unique per App, so emails are unique and looked up
 *   case-insensitively while `email` keeps the spelling given.
 *
 * Existing users whose emails differ only by case (allowed before) must not stop the migration: the
 * oldest of each such group gets the key, the others keep their email but no key. They stay readable
 * and are still found by their exact spelling; no new user can take any spelling of that email.
 */
export function hardening(dialect: Dialect) {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      // SQLite migrations run outside a transaction (kysely): this one is all or nothing anyway.
      const run = async (tx: Kysely<any>) => {
        await tx.schema
          .createTable('rate_limits')
          .addColumn('bucket', 'text', (c) => c.primaryKey())
          .addColumn('window_start', big, (c) => c.notNull())
          .addColumn('hits', big, (c) => c.notNull())
          .execute();

        await tx.schema
          .createTable('idempotency_keys')
          .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
          .addColumn('idem_key', 'text', (c) => c.notNull())
          .addColumn('fingerprint', 'text', (c) => c.notNull())
          .addColumn('status_code', 'integer', (c) => c.notNull())
          .addColumn('response', 'text', (c) => c.notNull())
          .addColumn('created_at_ms', big, (c) => c.notNull())
          .addPrimaryKeyConstraint('idempotency_keys_pk', ['app_uid', 'idem_key'])
          .execute();
        await tx.schema.createIndex('idempotency_keys_created_idx').on('idempotency_keys').column('created_at_ms').execute();

        await tx.schema.alterTable('users').addColumn('email_key', 'text').execute();
        await backfillEmailKeys(tx);
        await tx.schema.createIndex('users_app_email_key_uq').on('users').columns(['app_uid', 'email_key']).unique().execute();
      };
      if (db.isTransaction) await run(db);
      else await db.transaction().execute(run);
    },
  };
}

/** email_key for every user with an email, oldest first; a later case-variant of a taken key gets none. */
async function backfillEmailKeys(db: Kysely<any>): Promise<void> {
  const users = await db.selectFrom('users').select(['uid', 'app_uid', 'email']).where('email', 'is not', null).orderBy('created_at').orderBy('uid').execute();
  const taken = new Set<string>();
  const updates: { uid: string; key: string }[] = [];
  for (const u of users) {
    const k = `${u.app_uid}\n${emailKey(u.email)}`;
    if (taken.has(k)) continue;
    taken.add(k);
    updates.push({ uid: u.uid, key: emailKey(u.email) });
  }
  for (let i = 0; i < updates.length; i += 500) {
    const chunk = updates.slice(i, i + 500);
    const cases = sql.join(
      chunk.map((u) => sql`when ${u.uid} then ${u.key}`),
      sql` `,
    );
    await db
      .updateTable('users')
      .set({ email_key: sql`case uid ${cases} end` })
      .where(
        'uid',
        'in',
        chunk.map((u) => u.uid),
      )
      .execute();
  }
}
