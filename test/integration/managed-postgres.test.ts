// 1,000 creates through a pooler, twice, and their POST → minted times; no wall-clock assertion: it shares the machine.
// PostgreSQL as managed providers serve it: through Debian's PgBouncer in transaction mode (a server
// connection per transaction, none held between them). One API and one worker process, 1,000 creates
// at 32 connections, 300 user lists and reads meanwhile, 100 edits once minted: no 5xx, no error line
// in either log, every asset minted once; with DATABASE_DIRECT_URL (LISTEN and migrations on a session
// of their own) and without it (the workers poll), as docs/production.md's step 2b sets them. The POST → minted times are printed (bench/README.md
// compares them with a direct connection's; no wall-clock assertion here).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshPostgres, tempDir } from '../helpers/env.js';
import { startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { runManagedLoad } from '../helpers/managed-load.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** docs/production.md's `settings`, `secrets` and `managed-postgres` blocks, run as written: the DATABASE_* settings they leave. */
function walkthroughDatabaseSettings(pooler: string, direct: string | null): Record<string, string> {
  const doc = fs.readFileSync(path.join(root, 'docs/production.md'), 'utf8');
  const blocks = new Map([...doc.matchAll(/<!-- walkthrough: ([\w-]+) -->\n```bash\n([\s\S]*?)\n```/g)].map((m) => [m[1], m[2]]));
  const block = (name: string) => {
    const code = blocks.get(name);
    assert.ok(code, `docs/production.md has no walkthrough block "${name}"`);
    return code;
  };
  const home = path.join(tempDir('mintworks-managed-doc-'), 'home');
  const env = { ...process.env, MW_HOME: home, MW_POOLER_URL: pooler, ...(direct ? { MW_DIRECT_URL: direct } : {}) };
  for (const name of ['settings', 'secrets', 'managed-postgres'])
    execFileSync('bash', ['-e', '-o', 'pipefail', '-c', block(name)], { cwd: root, env, stdio: 'pipe' });
  const settings = Object.fromEntries(
    fs
      .readFileSync(path.join(home, 'secrets', 'secrets.env'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('DATABASE_'))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  fs.rmSync(path.dirname(home), { recursive: true, force: true });
  return settings;
}

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
      // The pooled settings as docs/production.md (step 2b) writes them.
      const env: Record<string, string> = v.pooled ? walkthroughDatabaseSettings(bouncer.urlFor(name), v.direct ? pgdb.url : null) : { DATABASE_URL: pgdb.url };
      if (v.pooled)
        assert.deepEqual(env, {
          DATABASE_URL: bouncer.urlFor(name),
          DATABASE_POOL_MODE: 'transaction',
          ...(v.direct ? { DATABASE_DIRECT_URL: pgdb.url } : {}),
        });
      await runManagedLoad({ env, directUrl: pgdb.url, label: v.label }); // prints its POST → minted times
    });
  }
});
