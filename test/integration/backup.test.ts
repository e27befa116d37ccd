// `mintworks backup` while the service runs, `mintworks restore` into a new DATA_DIR: the restored
// installation has the same Apps, assets, wallets and chain, and mints on. Restore refuses what would
// overwrite an installation or could not work.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createPublicClient, http, parseAbi } from 'viem';
import { loadConfig } from '../../src/config/config.js';
import { startService, type Service } from '../../src/boot/service.js';
import { createApp } from '../../src/services/apps/registry.js';
import { createCollection } from '../../src/services/collections/collections.js';
import { signAppToken } from '../../src/services/apps/tokens.js';
import { ApiClient, freePort, freshPostgres, tempDir, waitFor } from '../helpers/env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);
const erc721 = parseAbi(['function ownerOf(uint256) view returns (address)']);

const cli = (env: Record<string, string>, ...args: string[]) =>
  run(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args, '--json'], { env: { ...process.env, ...env } }).then((r) => JSON.parse(r.stdout));
const refused = (env: Record<string, string>, args: string[], message: RegExp) =>
  assert.rejects(cli(env, ...args), (err: any) => {
    assert.equal(err.code, 2, err.stdout);
    assert.match(JSON.parse(err.stdout).error, message);
    return true;
  });

const start = async (dataDir: string, extra: Record<string, string> = {}) =>
  startService(
    loadConfig({ PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO_APP: 'false', ...extra }),
  );

describe('backup and restore (SQLite, embedded chain)', () => {
  const dataDir = tempDir();
  const out = path.join(tempDir(), 'backup');
  let svc: Service;
  let app: { uid: string; api_key: string; api_secret: string };
  let api: ApiClient;
  let collection: string;
  let asset: { uid: string; token_id: number; owner_address: string };

  before(async () => {
    svc = await start(dataDir);
    app = await createApp(svc.ctx, 'Backed up', 'development');
    api = new ApiClient(`${svc.url}/v1`, app.api_key, await signAppToken(app.api_key, app.api_secret));
    ({ uid: collection } = await createCollection(svc.ctx, app.uid, { name: 'B', symbol: 'B', editable: false }));
    const user = (await api.post('/user', {})).body.data.uid;
    const created = await api.post('/asset', {
      user_uid: user,
      collection_uid: collection,
      asset_external_id: 'b1',
      data: { name: 'B', unique_name: false, image_url: 'https://example.com/b.png', store_image_on_ipfs: false },
    });
    asset = await waitFor(
      'minted',
      async () => {
        const a = (await api.get(`/asset/${created.body.data.uid}`)).body.data;
        return a.is_minted ? a : null;
      },
      30_000,
    );
  });
  after(() => svc?.stop());

  it('backs up a running installation: database, keys, chain state, private', async () => {
    const r = await cli({ DATA_DIR: dataDir }, 'backup', '--out', out);
    assert.equal(r.directory, out);
    assert.deepEqual(r.contents.filter((c: string) => ['chain.json', 'mintworks.sqlite', 'master.key', 'operator.token'].includes(c)).sort(), [
      'chain.json',
      'master.key',
      'mintworks.sqlite',
      'operator.token',
    ]);
    assert.equal(r.master_key, 'master.key');
    assert.equal(fs.statSync(out).mode & 0o777, 0o700);
    assertOwnerOnly(out);
    await refused({ DATA_DIR: dataDir }, ['backup', '--out', out], /exists and is not empty/);
  });

  it('refuses to restore over a running or existing installation, or a backup of another chain', async () => {
    await refused({ DATA_DIR: dataDir }, ['restore', '--from', out], /another Mintworks \(pid \d+\) is using DATA_DIR/);
    await refused({ DATA_DIR: tempDir() }, ['restore', '--from', tempDir()], /is not a Mintworks backup/);
    await refused({ DATA_DIR: tempDir(), CHAIN_ID: '80002' }, ['restore', '--from', out], /backup is of chain 31337, but CHAIN_ID is 80002/);
    const pg = await freshPostgres();
    try {
      await refused(
        { DATA_DIR: tempDir(), DATABASE_URL: pg.url },
        ['restore', '--from', out],
        /holds a sqlite database, but DATABASE_URL points at PostgreSQL/,
      );
    } finally {
      await pg.drop();
    }
  });

  it('a restored installation has the same Apps, assets and chain, and mints on', async () => {
    await svc.stop();
    const restoredDir = tempDir();
    const r = await cli({ DATA_DIR: restoredDir }, 'restore', '--from', out);
    assert.ok(r.restored.includes('mintworks.sqlite'));
    svc = await start(restoredDir);
    const again = new ApiClient(`${svc.url}/v1`, app.api_key, await signAppToken(app.api_key, app.api_secret));
    const a = (await again.get(`/asset/${asset.uid}`)).body.data;
    assert.equal(a.is_minted, true);
    const owner = await createPublicClient({ transport: http(svc.rpcUrl) }).readContract({
      address: a.explorer_url.split('/token/')[1].split('?')[0],
      abi: erc721,
      functionName: 'ownerOf',
      args: [BigInt(asset.token_id)],
    });
    assert.equal(owner.toLowerCase(), asset.owner_address);
    const user = (await again.post('/user', {})).body.data.uid;
    const created = await again.post('/asset', {
      user_uid: user,
      collection_uid: collection,
      asset_external_id: 'b2',
      data: { name: 'B', unique_name: false, image_url: 'https://example.com/b.png', store_image_on_ipfs: false },
    });
    assert.equal(created.status, 201);
    await waitFor('minted after restore', async () => (await again.get(`/asset/${created.body.data.uid}`)).body.data.is_minted, 30_000);
    await svc.stop();
    await refused({ DATA_DIR: restoredDir }, ['restore', '--from', out], /is not empty.*--force/);
    const forced = await cli({ DATA_DIR: restoredDir }, 'restore', '--from', out, '--force');
    assert.ok(fs.existsSync(path.join(forced.moved_aside, 'mintworks.sqlite')));
  });
});

/** Every file of a backup 0600 and every directory 0700, whatever the umask wrote them with. */
function assertOwnerOnly(dir: string): void {
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const p = path.join(e.parentPath ?? (e as { path: string }).path, e.name);
    assert.equal(fs.statSync(p).mode & 0o777, e.isDirectory() ? 0o700 : 0o600, p);
  }
}

describe('backup on PostgreSQL', () => {
  it('dumps the database with pg_dump beside the keys and chain state', async () => {
    const pg = await freshPostgres();
    const dataDir = tempDir();
    const svc = await start(dataDir, { DATABASE_URL: pg.url });
    try {
      const out = path.join(tempDir(), 'b');
      const r = await cli({ DATA_DIR: dataDir, DATABASE_URL: pg.url }, 'backup', '--out', out);
      assert.equal(r.database, 'postgres');
      assert.ok(r.contents.includes('mintworks.pgdump'), JSON.stringify(r));
      assert.ok(fs.statSync(path.join(out, 'mintworks.pgdump')).size > 1000);
      assertOwnerOnly(out);
      assert.ok(r.contents.includes('chain.json'));
    } finally {
      await svc.stop();
      await pg.drop();
    }
  });
});
