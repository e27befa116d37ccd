// PostgreSQL over TLS, as libpq's `sslmode` says, against a cluster of the test's own with ssl=on and a
// CA and server certificate the test makes with openssl (the certificate names `localhost` only):
// verify-full with the CA from DATABASE_CA_FILE, from the URL's sslrootcert and from PGSSLROOTCERT;
// verify-full refused by name on 127.0.0.1 where verify-ca passes; require encrypts without checking;
// and a service started with another CA stops at once, naming the host and the reason.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { privateCluster, type PrivateCluster } from '../helpers/private-pg.js';
import { freePort, tempDir } from '../helpers/env.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A CA (ca.crt, ca.key) in `dir`; with `server`, a certificate for localhost signed by it. */
function makeCa(dir: string, name: string, server = false): void {
  fs.mkdirSync(dir, { recursive: true });
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', `/CN=${name}`], dir);
  if (!server) return;
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost'], dir);
  fs.writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost\n');
  openssl(
    ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'ext.cnf'],
    dir,
  );
}

/** Opens the store at `url`, migrates it, and says whether its connection is encrypted. */
async function openOverTls(url: string, caFile?: string): Promise<boolean> {
  const store = openStore({
    databaseUrl: url,
    dataDir: tempDir(),
    checkpoints: 'none',
    postgres: { poolMode: 'session', poolSize: 2, statementTimeoutMs: 0, idleInTransactionTimeoutMs: 0, caFile },
  });
  try {
    await migrateToLatest(store);
    const r = await sql<{ ssl: boolean }>`select ssl from pg_stat_ssl where pid = pg_backend_pid()`.execute(store.db);
    return r.rows[0].ssl;
  } finally {
    await store.close();
  }
}

describe('PostgreSQL over TLS (a cluster of its own)', () => {
  const certs = tempDir('mintworks-tls-');
  const good = path.join(certs, 'good');
  const wrong = path.join(certs, 'wrong');
  let cluster: PrivateCluster;
  before(async () => {
    makeCa(good, 'Mintworks test CA', true);
    makeCa(wrong, 'Another CA');
    cluster = await privateCluster({ tls: { cert: path.join(good, 'server.crt'), key: path.join(good, 'server.key') } });
    cluster.start();
  });
  after(() => {
    cluster?.destroy();
    fs.rmSync(certs, { recursive: true, force: true });
  });
  const at = (host: string, query: string) => `postgres://postgres@${host}:${cluster.port}/postgres?${query}`;

  it('verify-full with the CA from DATABASE_CA_FILE, the URL or PGSSLROOTCERT: migrated over an encrypted connection', async () => {
    assert.equal(await openOverTls(at('localhost', 'sslmode=verify-full'), path.join(good, 'ca.crt')), true);
    assert.equal(await openOverTls(at('localhost', `sslmode=verify-full&sslrootcert=${path.join(good, 'ca.crt')}`)), true);
    process.env.PGSSLROOTCERT = path.join(good, 'ca.crt');
    try {
      assert.equal(await openOverTls(at('localhost', 'sslmode=verify-full')), true);
    } finally {
      delete process.env.PGSSLROOTCERT;
    }
  });

  it('verify-full checks the name (127.0.0.1 is not in the certificate); verify-ca checks only the chain; require only encrypts', async () => {
    await assert.rejects(openOverTls(at('127.0.0.1', 'sslmode=verify-full'), path.join(good, 'ca.crt')), (err: Error) => {
      assert.match(err.message, new RegExp(`TLS with 127\\.0\\.0\\.1:${cluster.port} failed: .*(altnames|does not match)`), err.message);
      return true;
    });
    assert.equal(await openOverTls(at('127.0.0.1', 'sslmode=verify-ca'), path.join(good, 'ca.crt')), true);
    assert.equal(await openOverTls(at('127.0.0.1', 'sslmode=require')), true);
    assert.equal(await openOverTls(at('127.0.0.1', 'sslmode=disable')), false);
  });

  it('a service given another CA stops at start, naming the host and the reason', async () => {
    const dataDir = tempDir('mintworks-tls-service-');
    const child = spawn(process.execPath, [path.join(root, 'dist/main.js')], {
      env: {
        ...process.env,
        DATABASE_URL: at('localhost', 'sslmode=verify-full'),
        DATABASE_CA_FILE: path.join(wrong, 'ca.crt'),
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        ANVIL_PORT: String(await freePort()),
        MASTER_KEY: 'ef'.repeat(32),
        LOG_FORMAT: 'json',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 1, out);
    assert.match(
      out,
      new RegExp(
        `TLS with localhost:${cluster.port} failed: [^"]*certificate[^"]*\\(sslmode=verify-full, CA from DATABASE_CA_FILE ${wrong.replaceAll('/', '\\/')}\\/ca\\.crt\\)`,
      ),
      out,
    );
    assert.match(out, /mintworks failed to start/, out);
  });
});
