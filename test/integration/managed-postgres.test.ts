// test:exclusive — 1,000 creates through a pooler, twice, and their POST → minted times; run with the machine to itself.
// PostgreSQL as managed providers serve it: through Debian's PgBouncer in transaction mode (a server
// connection per transaction, none held between them). One API and one worker process, 1,000 creates
// at 32 connections, 300 user lists and reads meanwhile, 100 edits once minted: no 5xx, no error line
// in either log, every asset minted once; with DATABASE_DIRECT_URL (LISTEN and migrations on a session
// of their own) and without it (the workers poll). The POST → minted times are printed (bench/README.md
// compares them with a direct connection's; no wall-clock assertion here).
import { after, before, describe, it } from 'node:test';
import { freshPostgres } from '../helpers/env.js';
import { startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { runManagedLoad } from '../helpers/managed-load.js';

describe('behind PgBouncer in transaction mode (postgres)', () => {
  let bouncer: PgBouncer;
  const dbs: Awaited<ReturnType<typeof freshPostgres>>[] = [];
  before(async () => {
    bouncer = await startPgBouncer({ server: { host: '127.0.0.1', port: 5432 }, poolSize: 20 });
  });
  after(async () => {
    bouncer?.stop();
    for (const d of dbs) await d.drop();
  });

  const variants: { label: string; direct: boolean; pooled: boolean }[] = [
    { label: 'pooled, with DATABASE_DIRECT_URL', direct: true, pooled: true },
    { label: 'pooled, without DATABASE_DIRECT_URL', direct: false, pooled: true },
  ];
  // MANAGED_BASELINE=1 adds the same run on a direct connection, to compare the POST → minted times.
  if (process.env.MANAGED_BASELINE === '1') variants.push({ label: 'direct connection', direct: false, pooled: false });

  for (const v of variants) {
    it(`${v.label}: 1,000 creates, lists and edits, no 5xx, no error line, minted once`, async () => {
      const pgdb = await freshPostgres();
      dbs.push(pgdb);
      const name = new URL(pgdb.url).pathname.slice(1);
      const env: Record<string, string> = v.pooled
        ? { DATABASE_URL: bouncer.urlFor(name), DATABASE_POOL_MODE: 'transaction', ...(v.direct ? { DATABASE_DIRECT_URL: pgdb.url } : {}) }
        : { DATABASE_URL: pgdb.url };
      const r = await runManagedLoad({ env, directUrl: pgdb.url, label: v.label });
      process.stdout.write(`# ${v.label}: POST → minted p50 ${r.p50} ms, p90 ${r.p90} ms; all minted ${r.seconds.toFixed(1)} s after the burst began\n`);
      process.stdout.write(`# ${v.label}: ${JSON.stringify(r.statuses)}\n`);
    });
  }
});
