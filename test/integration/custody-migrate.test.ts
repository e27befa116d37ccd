// `mintworks keys migrate --to pkcs11`: an installation made with local custody (DATA_DIR/master.key)
// moves its master key into a SoftHSM2 token. Before: KEY_CUSTODY=pkcs11 refuses to start it. After:
// no master.key, the old App secret, webhook secret, assets and wallets all still work, it mints on
// with the chain accounts its contracts know, and it refuses to start with KEY_CUSTODY=local. The
// migrated service runs as a process of its own (`node dist/main.js`) with debug logs, and a scan of
// DATA_DIR and of those logs finds no master key (old or new), no seed and no wallet key.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pino from 'pino';
import { Aes256Gcm, CipherSuite, DhkemX25519HkdfSha256, HkdfSha256 } from '@hpke/core';
import { privateKeyToAccount, type HDAccount } from 'viem/accounts';
import { loadConfig } from '../../src/config/config.js';
import { openCore } from '../../src/boot/open-core.js';
import { startService, type Service } from '../../src/boot/service.js';
import { createApp } from '../../src/services/apps/registry.js';
import { createCollection } from '../../src/services/collections/collections.js';
import { signAppToken } from '../../src/services/apps/tokens.js';
import { setWebhook } from '../../src/webhooks/endpoints.js';
import { ApiClient, freePort, tempDir, waitFor } from '../helpers/env.js';
import { initSoftHsmToken } from '../helpers/softhsm.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);
const token = initSoftHsmToken('mintworks-migrate');
const OPERATOR = 'operator-token-for-the-migration-test-0123';
const hsmSettings = { PKCS11_MODULE: token.env.PKCS11_MODULE, PKCS11_TOKEN_LABEL: token.label, PKCS11_PIN_FILE: token.pinFile };
const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() });
const asset = (i: number) => ({
  asset_external_id: `m-${i}`,
  data: { name: 'M', unique_name: false, image_url: 'https://example.com/m.png', store_image_on_ipfs: false },
});

describe('keys migrate --to pkcs11 (SQLite, embedded chain)', () => {
  const dataDir = tempDir();
  let env: Record<string, string>;
  let app: { uid: string; api_key: string; api_secret: string };
  let collection: string;
  let user: string;
  let wallet: string;
  let deployer: string;
  let oldMasterKey: string;
  let child: ChildProcess | null = null;
  const logFile = path.join(tempDir(), 'service.log');

  before(async () => {
    env = {
      PORT: String(await freePort()),
      ANVIL_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      DEMO_APP: 'false',
      OPERATOR_TOKEN: OPERATOR,
      OUTBOUND_ALLOW_PRIVATE: 'true',
    };
    const svc: Service = await startService(loadConfig(env));
    try {
      app = await createApp(svc.ctx, 'Migrated', 'development');
      await setWebhook(svc.ctx, app.uid, { url: 'http://127.0.0.1:9/hook' });
      ({ uid: collection } = await createCollection(svc.ctx, app.uid, { name: 'M', symbol: 'M', editable: false }));
      const api = new ApiClient(`${svc.url}/v1`, app.api_key, await signAppToken(app.api_key, app.api_secret));
      user = (await api.post('/user', {})).body.data.uid;
      await waitFor('deployed', async () => (await api.get(`/collection/${collection}`)).body.data.status === 'deployed', 30_000);
      const created = await api.post('/asset', { user_uid: user, collection_uid: collection, ...asset(0) });
      const minted = await waitFor(
        'minted',
        async () =>
          (await api.get(`/asset/${created.body.data.uid}`)).body.data.is_minted ? (await api.get(`/asset/${created.body.data.uid}`)).body.data : null,
        30_000,
      );
      wallet = minted.owner_address;
      deployer = svc.ctx.keys.deployer().address.toLowerCase();
    } finally {
      await svc.stop();
    }
    oldMasterKey = fs.readFileSync(path.join(dataDir, 'master.key'), 'utf8').trim();
  });
  after(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
  });

  const cli = (extra: Record<string, string>, ...args: string[]) =>
    run(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args, '--json'], { env: { ...process.env, ...env, ...extra } });

  it('KEY_CUSTODY=pkcs11 refuses an installation that was not migrated, naming the command', async () => {
    await assert.rejects(openCore(loadConfig({ ...env, ...token.env }), pino({ level: 'silent' })), /keys migrate --to pkcs11/);
  });

  it('migrates: every secret re-sealed under an HSM-wrapped master key, master.key removed, audited', async () => {
    const { stdout } = await cli(hsmSettings, 'keys', 'migrate', '--to', 'pkcs11');
    const r = JSON.parse(stdout);
    assert.equal(r.master_key_file_removed, true);
    assert.ok(r.resealed >= 3, `seed, API secret and webhook secret: ${stdout}`);
    assert.equal(fs.existsSync(path.join(dataDir, 'master.key')), false);
    // Local custody cannot open it any more (a new master.key would be made, and refused).
    await assert.rejects(openCore(loadConfig(env), pino({ level: 'silent' })), /KEY_CUSTODY=pkcs11/);
    fs.rmSync(path.join(dataDir, 'master.key'), { force: true });
    const audit = JSON.parse((await cli(token.env, 'audit', '--action', 'custody.migrated')).stdout).entries;
    assert.equal(audit.length, 1);
    assert.equal(audit[0].actor, 'cli');
    assert.equal(audit[0].details.to, 'pkcs11');
  });

  it('the migrated installation runs with KEY_CUSTODY=pkcs11: old secrets work, it mints on with the same accounts, exports', async () => {
    const log = fs.openSync(logFile, 'a');
    child = spawn(process.execPath, [path.join(root, 'dist/main.js')], {
      env: { ...process.env, ...env, ...token.env, LOG_LEVEL: 'debug', LOG_FORMAT: 'json' },
      stdio: ['ignore', log, log],
    });
    const base = `http://127.0.0.1:${env.PORT}`;
    await waitFor('service up', async () => (await fetch(`${base}/health`).catch(() => null))?.status === 200, 60_000, 200);
    const api = new ApiClient(`${base}/v1`, app.api_key, await signAppToken(app.api_key, app.api_secret));
    assert.equal((await api.get(`/user/${user}`)).status, 200, 'the App secret from before the migration still authenticates');
    const created = await api.post('/asset', { user_uid: user, collection_uid: collection, ...asset(1) });
    assert.equal(created.status, 201, created.raw);
    const minted = await waitFor(
      'minted after the migration',
      async () =>
        (await api.get(`/asset/${created.body.data.uid}`)).body.data.is_minted ? (await api.get(`/asset/${created.body.data.uid}`)).body.data : null,
      30_000,
    );
    assert.equal(minted.owner_address, wallet);
    const admin = new ApiClient(`${base}/admin/v1`, undefined, OPERATOR);
    const webhook = await admin.get(`/apps/${app.uid}/webhook`);
    assert.equal(webhook.status, 200, webhook.raw);
    const recipient = await suite.kem.generateKeyPair();
    const r = await admin.post(`/apps/${app.uid}/users/${user}/wallet-export`, {
      recipient_public_key: Buffer.from(await suite.kem.serializePublicKey(recipient.publicKey)).toString('base64url'),
    });
    assert.equal(r.status, 200, r.raw);
    const opened = await (
      await suite.createRecipientContext({
        recipientKey: recipient.privateKey,
        enc: Buffer.from(r.body.data.enc, 'base64url'),
        info: new TextEncoder().encode('mintworks wallet export v1'),
      })
    ).open(Buffer.from(r.body.data.ciphertext, 'base64url'));
    assert.equal(privateKeyToAccount(new TextDecoder().decode(opened) as `0x${string}`).address.toLowerCase(), wallet);
    child.kill('SIGTERM');
    await new Promise((res) => child!.once('exit', res));
  });

  it('a backup holds only sealed material and names its HSM; restore without the HSM refuses it', async () => {
    const out = path.join(tempDir(), 'backup');
    const b = JSON.parse((await cli(token.env, 'backup', '--out', out)).stdout);
    assert.equal(b.master_key, 'hsm');
    assert.equal(b.hsm_token, token.label);
    assert.equal(fs.existsSync(path.join(out, 'master.key')), false);
    assert.match(b.notes.join(' '), /useless|opens nothing/);
    const elsewhere = { DATA_DIR: tempDir(), PKCS11_MODULE: '', PKCS11_TOKEN_LABEL: '', PKCS11_PIN_FILE: '', KEY_CUSTODY: 'local' };
    await assert.rejects(cli(elsewhere, 'restore', '--from', out), (err: any) => {
      assert.equal(err.code, 2, err.stdout);
      assert.match(JSON.parse(err.stdout).error, /useless by design/);
      return true;
    });
    const audit = JSON.parse((await cli(token.env, 'audit', '--action', 'backup.created')).stdout).entries;
    assert.equal(audit.length, 1);
  });

  it('no key in the clear: DATA_DIR and the service log hold no master key (old or new), seed or wallet key', async () => {
    const core = await openCore(loadConfig({ ...env, ...token.env }), pino({ level: 'silent' }));
    let needles: Map<string, string>;
    try {
      assert.equal(core.keys.deployer().address.toLowerCase(), deployer, 'the chain accounts its contracts know');
      const seed = core.box.open((await core.store.db.selectFrom('meta').select('value').where('key', '=', 'seed').executeTakeFirstOrThrow()).value);
      const keys = (core.box as unknown as { keys: Map<string, Buffer> }).keys;
      assert.equal(keys.size, 1, 'one master key, from the HSM');
      needles = new Map([
        ['old master key (hex)', oldMasterKey],
        ['old master key (raw)', Buffer.from(oldMasterKey, 'hex').toString('latin1')],
        ['seed', seed],
        ['wallet key', Buffer.from(core.keys.user(user).getHdKey().privateKey!).toString('hex')],
        ['deployer key', Buffer.from((core.keys.deployer() as HDAccount).getHdKey().privateKey!).toString('hex')],
      ]);
      for (const [id, k] of keys) {
        needles.set(`master key ${id} (hex)`, k.toString('hex'));
        needles.set(`master key ${id} (base64)`, k.toString('base64'));
        needles.set(`master key ${id} (raw)`, k.toString('latin1'));
      }
    } finally {
      await core.store.close();
    }
    const files = [
      ...fs
        .readdirSync(dataDir, { withFileTypes: true, recursive: true })
        .filter((e) => e.isFile())
        .map((e) => path.join(e.parentPath, e.name)),
      logFile,
    ];
    assert.ok(fs.statSync(logFile).size > 1000, 'the service logged (debug)');
    for (const f of files) {
      const body = fs.readFileSync(f).toString('latin1');
      for (const [what, needle] of needles) assert.equal(body.includes(needle), false, `${what} found in ${f}`);
    }
    // The scan finds what it looks for: the export above decrypted to the wallet key, which is a needle.
    assert.ok(needles.get('wallet key')!.length === 64);
  });
});
