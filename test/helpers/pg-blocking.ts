// PostgreSQL only: tests that make two transactions meet, one holding a lock the other needs.
import { sql, type Kysely, type Transaction } from 'kysely';
import { waitFor } from './env.js';

/**
 * Waits until a backend of the database waits for a lock held by the transaction `tx` (pg_blocking_pids),
 * asked on another connection of `db`: the work started beside `tx` has reached the point where it must
 * wait for `tx` to end.
 */
export async function waitUntilBlockedBy<DB>(what: string, tx: Transaction<DB>, db: Kysely<DB>): Promise<void> {
  const me = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx)).rows[0].pid;
  await waitFor(
    what,
    async () => {
      const waiting = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where ${me}::int = any(pg_blocking_pids(pid))`.execute(db);
      return waiting.rows[0].n > 0;
    },
    10_000,
  );
}
