import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/** The columns of a chain transaction that grow with its calls: its signed bytes and its payload. */
const LARGE_COLUMNS = ['raw', 'payload'] as const;

/**
 * PostgreSQL: a chain transaction's signed bytes and payload are compressed with LZ4 instead of
 * PostgreSQL's own pglz. A mint transaction of 400 tokens carries about 100 KB of hex and 45 KB of
 * payload: pglz took 2.3–3.0 ms of the server's CPU to store them (6 µs a token of a drain) and kept
 * 29 KB, LZ4 0.24–0.33 ms and 15 KB. Values stored before keep their compression (both read the same).
 *
 * Only where the server has LZ4 (PostgreSQL 14 or later, built with it, as the common packages and
 * managed services are): elsewhere nothing changes.
 */
export function signedBytesLz4(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres' || !(await hasLz4(db))) return;
      for (const column of LARGE_COLUMNS) await sql`alter table chain_txs alter column ${sql.id(column)} set compression lz4`.execute(db);
    },
    async down(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres' || !(await hasLz4(db))) return;
      for (const column of LARGE_COLUMNS) await sql`alter table chain_txs alter column ${sql.id(column)} set compression default`.execute(db);
    },
  };
}

/** Whether the server can compress with LZ4: `default_toast_compression` (PostgreSQL 14+) lists it only when built with it. */
async function hasLz4(db: Kysely<any>): Promise<boolean> {
  const { rows } = await sql<{
    n: number;
  }>`select count(*)::int as n from pg_settings where name = 'default_toast_compression' and 'lz4' = any(enumvals)`.execute(db);
  return rows[0].n > 0;
}
