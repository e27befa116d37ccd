// How the PostgreSQL settings become connections: each URL's sslmode as libpq reads it, where the CA
// comes from, a TLS refusal said with its host, the timeouts per session or per transaction, and the
// settings refused at start.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { clientConfig, explainTlsFailure, sslModeOf } from '../../src/store/postgres/connection.js';
import { sessionSettings, transactionSettings } from '../../src/store/postgres/dialect.js';
import { ConfigError, loadConfig, withRole } from '../../src/config/config.js';
import { poolSizeOf } from '../../src/boot/open-store.js';
import { tempDir } from '../helpers/env.js';

const dir = tempDir('mintworks-pgconn-');
const ca = path.join(dir, 'ca.pem');
fs.writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n');
const other = path.join(dir, 'other.pem');
fs.writeFileSync(other, 'OTHER');

describe('PostgreSQL connection settings', () => {
  it('sslmode: disable is plain, require encrypts without checking, verify-ca checks the chain only, verify-full the name too', () => {
    const base = 'postgres://u:p@db.example.com:5432/mw';
    assert.equal(clientConfig(base, {}, {}).ssl, false);
    assert.equal(clientConfig(`${base}?sslmode=disable`, {}, {}).ssl, false);
    assert.deepEqual(clientConfig(`${base}?sslmode=require`, { caFile: ca }, {}).ssl, { rejectUnauthorized: false });
    const verifyCa = clientConfig(`${base}?sslmode=verify-ca`, { caFile: ca }, {}).ssl as {
      rejectUnauthorized: boolean;
      ca: string;
      checkServerIdentity?: () => undefined;
    };
    assert.equal(verifyCa.rejectUnauthorized, true);
    assert.match(verifyCa.ca, /BEGIN CERTIFICATE/);
    assert.equal(verifyCa.checkServerIdentity?.(), undefined);
    const full = clientConfig(`${base}?sslmode=verify-full`, { caFile: ca }, {}).ssl as Record<string, unknown>;
    assert.equal(full.rejectUnauthorized, true);
    assert.equal(full.checkServerIdentity, undefined, "Node's own name check stays");
    // Without a CA anywhere: the system's trusted CAs.
    assert.equal((clientConfig(`${base}?sslmode=verify-full`, {}, {}).ssl as Record<string, unknown>).ca, undefined);
  });

  it('TLS parameters are taken out of the URL `pg` reads (it would treat require as verify-full); the rest stays', () => {
    const c = clientConfig(`postgres://u:p@h:6543/mw?sslmode=require&application_name=mw&sslrootcert=${ca}`, {}, {});
    assert.equal(c.connectionString, 'postgres://u:p@h:6543/mw?application_name=mw');
  });

  it('the CA: the URL sslrootcert, else DATABASE_CA_FILE, else PGSSLROOTCERT; PGSSLMODE when the URL says nothing', () => {
    const url = 'postgres://h/mw?sslmode=verify-full';
    const caOf = (u: string, caFile: string | undefined, env: NodeJS.ProcessEnv) => (clientConfig(u, { caFile }, env).ssl as { ca?: string }).ca;
    assert.equal(caOf(`${url}&sslrootcert=${other}`, ca, { PGSSLROOTCERT: ca }), 'OTHER');
    assert.equal(caOf(url, other, { PGSSLROOTCERT: ca }), 'OTHER');
    assert.equal(caOf(url, undefined, { PGSSLROOTCERT: other }), 'OTHER');
    assert.equal(caOf(`${url}&sslrootcert=system`, undefined, { PGSSLROOTCERT: other }), undefined);
    assert.equal(sslModeOf('postgres://h/mw', { PGSSLMODE: 'require' }), 'require');
    assert.deepEqual(clientConfig('postgres://h/mw', {}, { PGSSLMODE: 'require' }).ssl, { rejectUnauthorized: false });
  });

  it('a CA file that cannot be read, or a fallback sslmode, is refused with what to do', () => {
    assert.throws(
      () => clientConfig('postgres://h/mw?sslmode=verify-full', { caFile: path.join(dir, 'missing.pem') }, {}),
      /cannot read the CA certificate \(DATABASE_CA_FILE\) .*missing\.pem/,
    );
    assert.throws(
      () => clientConfig('postgres://h/mw?sslmode=prefer', {}, {}),
      /sslmode=prefer is not supported: use disable, require, verify-ca, verify-full/,
    );
  });

  it('a TLS refusal names the host, the reason, the mode and where the CA came from; other errors pass as they are', () => {
    const refused = Object.assign(new Error('unable to verify the first certificate'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
    const e = explainTlsFailure(refused, 'postgres://u:secret@db.example.com:6543/mw?sslmode=verify-full', { caFile: ca }, {}) as Error & { code: string };
    assert.equal(
      e.message,
      `TLS with db.example.com:6543 failed: unable to verify the first certificate (sslmode=verify-full, CA from DATABASE_CA_FILE ${ca})`,
    );
    assert.equal(e.code, 'UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    assert.doesNotMatch(e.message, /secret/);
    const refusedPlain = new Error('The server does not support SSL connections');
    assert.match(
      (explainTlsFailure(refusedPlain, 'postgres://db/mw?sslmode=require', {}, {}) as Error).message,
      /^TLS with db:5432 failed: The server does not support SSL connections \(sslmode=require\)$/,
    );
    const other = Object.assign(new Error('password authentication failed for user "mw"'), { code: '28P01' });
    assert.equal(explainTlsFailure(other, 'postgres://db/mw', {}, {}), other);
  });

  it('timeouts: SET LOCAL at the start of each transaction behind a transaction pooler, SET once per session otherwise; 0 leaves the server its own', () => {
    assert.equal(transactionSettings(60_000, 30_000), 'set local statement_timeout = 60000; set local idle_in_transaction_session_timeout = 30000');
    assert.equal(sessionSettings(60_000, 30_000), 'set statement_timeout = 60000; set idle_in_transaction_session_timeout = 30000');
    assert.equal(transactionSettings(0, 5000), 'set local idle_in_transaction_session_timeout = 5000');
    assert.equal(transactionSettings(0, 0), '');
  });

  it('settings: defaults, and bad values named at start', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://h/mw' });
    assert.deepEqual(c.database, {
      directUrl: undefined,
      poolMode: 'session',
      caFile: undefined,
      poolSize: 10,
      workersPoolSize: 4,
      statementTimeoutMs: 60_000,
      idleInTransactionTimeoutMs: 60_000,
    });
    const refused = (env: NodeJS.ProcessEnv, pattern: RegExp) =>
      assert.throws(
        () => loadConfig(env),
        (err: Error) => err instanceof ConfigError && pattern.test(err.message),
      );
    refused({ DATABASE_URL: 'postgres://h/mw', DATABASE_POOL_MODE: 'statement' }, /DATABASE_POOL_MODE/);
    refused({ DATABASE_URL: 'postgres://h/mw?sslmode=prefer' }, /DATABASE_URL: sslmode must be one of disable, require, verify-ca, verify-full/);
    refused({ DATABASE_URL: 'postgres://h/mw', DATABASE_DIRECT_URL: 'mysql://h/mw' }, /DATABASE_DIRECT_URL: must start with postgres:\/\//);
    refused({ DATABASE_DIRECT_URL: 'postgres://h/mw' }, /DATABASE_DIRECT_URL: is for PostgreSQL/);
    refused({ DATABASE_URL: 'postgres://h/mw', DATABASE_POOL_SIZE: '0' }, /DATABASE_POOL_SIZE/);
    refused({ DATABASE_URL: 'postgres://h/mw', DATABASE_WORKERS_POOL_SIZE: '0' }, /DATABASE_WORKERS_POOL_SIZE/);
  });

  it("pool sizes: a part that runs only the workers (the workers' thread, a worker process) has the workers' pool, at most DATABASE_POOL_SIZE", () => {
    const service = loadConfig({ DATABASE_URL: 'postgres://h/mw' });
    assert.equal(poolSizeOf(service), 10, 'npm start: the main thread serves the API');
    assert.equal(poolSizeOf(withRole(service, { runApi: false })), 4, "the workers' thread, a worker process");
    assert.equal(poolSizeOf(withRole(service, { runWorkers: false })), 10, 'an API process');
    assert.equal(poolSizeOf(loadConfig({ DATABASE_URL: 'postgres://h/mw', WORKER_THREAD: 'false' })), 10, 'API and workers on one thread share the pool');
    const small = loadConfig({ DATABASE_URL: 'postgres://h/mw', DATABASE_POOL_SIZE: '2' });
    assert.equal(poolSizeOf(withRole(small, { runApi: false })), 2, 'never more than DATABASE_POOL_SIZE');
    const more = loadConfig({ DATABASE_URL: 'postgres://h/mw', DATABASE_WORKERS_POOL_SIZE: '8' });
    assert.equal(poolSizeOf(withRole(more, { runApi: false })), 8);
  });
});
