// What every process of an installation must agree on (src/services/installation.ts), on a real
// database: the first records, a later one with another value refuses naming both, a process without
// PUBLIC_URL takes the recorded one; and who must be funded (src/domain/chain-funding.ts fundingNeeds).
// On PostgreSQL, inserting jobs notifies `mintworks_wake` with each kind (migration 019).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../../src/config/config.js';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { agreeOnInstallation, InstallationMismatchError, installationSettings, setPublicUrl } from '../../src/services/installation.js';
import { fundingNeeds, LOW_BALANCE_WEI } from '../../src/domain/chain-funding.js';
import { tempDir } from '../helpers/env.js';
import { migratedSqliteDir, migratedPostgres } from '../helpers/schema-copies.js';

const log = pino({ level: 'silent' });
const cfg = (env: Record<string, string>) => loadConfig({ DATA_DIR: tempDir(), OPERATOR_TOKEN: 'operator-token-0123456789abcdef', ...env });

describe('installation settings', () => {
  const stores: Store[] = [];
  const fresh = async () => {
    const store = openStore({ dataDir: await migratedSqliteDir() });
    await migrateToLatest(store);
    stores.push(store);
    return store;
  };
  after(async () => {
    for (const s of stores) await s.close();
  });

  it('a split installation: the API records its URL, a worker without PUBLIC_URL takes it, another URL is refused naming both', async () => {
    const { db } = await fresh();
    const opts = { sole: false, log };
    await assert.rejects(agreeOnInstallation(db, cfg({ API: 'false' }), { ...opts, publicUrlSet: false }), /PUBLIC_URL is not set and no API process/);
    const api = cfg({ WORKERS: 'false', PUBLIC_URL: 'https://mint.example.com/' });
    assert.equal((await agreeOnInstallation(db, api, { ...opts, publicUrlSet: true })).publicUrl, 'https://mint.example.com');
    const worker = await agreeOnInstallation(db, cfg({ API: 'false', PORT: '9999' }), { ...opts, publicUrlSet: false });
    assert.equal(worker.publicUrl, 'https://mint.example.com');
    assert.equal(worker.chains[0].explorer, 'https://mint.example.com/explorer', 'links derived from the URL follow it');
    await assert.rejects(agreeOnInstallation(db, cfg({ PUBLIC_URL: 'http://127.0.0.1:8080' }), { ...opts, publicUrlSet: true }), (err: Error) => {
      assert.ok(err instanceof InstallationMismatchError);
      assert.match(err.message, /PUBLIC_URL is http:\/\/127\.0\.0\.1:8080, but this installation's public URL is https:\/\/mint\.example\.com/);
      return true;
    });
    await setPublicUrl(db, 'http://127.0.0.1:8080');
    assert.equal(
      (await agreeOnInstallation(db, cfg({ PUBLIC_URL: 'http://127.0.0.1:8080' }), { ...opts, publicUrlSet: true })).publicUrl,
      'http://127.0.0.1:8080',
    );
  });

  it('refuses another operator token or other chains in a split installation, naming digests, never the token', async () => {
    const { db } = await fresh();
    const opts = { sole: false, log, publicUrlSet: true };
    await agreeOnInstallation(db, cfg({ PUBLIC_URL: 'http://a.example' }), opts);
    await assert.rejects(
      agreeOnInstallation(db, cfg({ PUBLIC_URL: 'http://a.example', OPERATOR_TOKEN: 'another-token-0123456789abcdef' }), opts),
      (err: Error) => {
        assert.match(err.message, /OPERATOR_TOKEN differs from this installation's \(sha-256 [0-9a-f]{12}… here, [0-9a-f]{12}… recorded\)/);
        assert.doesNotMatch(err.message, /another-token/);
        return true;
      },
    );
    await assert.rejects(
      agreeOnInstallation(db, cfg({ PUBLIC_URL: 'http://a.example', CHAIN_ID: '1337' }), opts),
      /this process serves chains 1337, but this installation serves 31337/,
    );
    assert.equal((await installationSettings(db)).chains, '31337');
  });

  it('one process (SQLite) re-records its development default when its port changes', async () => {
    const { db } = await fresh();
    await agreeOnInstallation(db, cfg({ PORT: '8080' }), { sole: true, log, publicUrlSet: false });
    assert.equal((await agreeOnInstallation(db, cfg({ PORT: '8081' }), { sole: true, log, publicUrlSet: false })).publicUrl, 'http://127.0.0.1:8081');
    assert.deepEqual(await installationSettings(db).then((s) => [s.public_url, s.public_url_source]), ['http://127.0.0.1:8081', 'default']);
  });
});

describe('fundingNeeds', () => {
  const acct = (role: 'deployer' | 'relayer', balance: bigint | null, address = `0x${role}`) => ({ address, role, balance });
  it('names each short account with its balance and what it needs; the deployer only until the forwarder exists', () => {
    const accounts = [acct('deployer', 0n), acct('relayer', 10n ** 18n, '0xr1'), acct('relayer', 10n ** 15n, '0xr2'), acct('relayer', null, '0xr3')];
    const before = fundingNeeds({ reachable: true, forwarderDeployed: false, accounts });
    assert.deepEqual(
      before.map((n) => [n.role, n.address, n.balance_wei, n.needs_wei]),
      [
        ['deployer', '0xdeployer', '0', String(LOW_BALANCE_WEI)],
        ['relayer', '0xr2', String(10n ** 15n), String(LOW_BALANCE_WEI - 10n ** 15n)],
      ],
    );
    assert.deepEqual(
      fundingNeeds({ reachable: true, forwarderDeployed: true, accounts }).map((n) => n.address),
      ['0xr2'],
    );
  });
});

describe('wake-ups on PostgreSQL (migration 019)', () => {
  it('notifies each kind of jobs inserted, once per kind, at commit', async () => {
    const pgdb = await migratedPostgres();
    const store = openStore({ databaseUrl: pgdb.url, dataDir: tempDir() });
    const listener = new pg.Client({ connectionString: pgdb.url });
    try {
      await migrateToLatest(store);
      await listener.connect();
      const got: string[] = [];
      let two: () => void = () => {};
      const twoArrived = new Promise<void>((r) => (two = r));
      listener.on('notification', (m) => {
        got.push(m.payload ?? '');
        if (got.length === 2) two();
      });
      await listener.query('listen mintworks_wake');
      const job = (kind: string, ref: string) => ({
        kind,
        ref,
        group_key: null,
        payload: '{}',
        status: 'queued' as const,
        run_at: 0,
        attempts: 0,
        max_attempts: 25,
        created_at: 0,
        updated_at: 0,
      });
      await store.db.transaction().execute(async (tx) => {
        await tx
          .insertInto('jobs')
          .values([job('asset.mint', 'a'), job('asset.mint', 'b'), job('wallet.create', 'c')])
          .execute();
        // Nothing leaves before the commit.
        await listener.query('select 1');
        assert.deepEqual(got, []);
      });
      await twoArrived;
      await listener.query('select 1'); // anything more would have arrived before this answer
      assert.deepEqual(got.sort(), ['asset.mint', 'wallet.create']);
    } finally {
      await listener.end().catch(() => {});
      await store.close();
      await pgdb.drop();
    }
  });
});
