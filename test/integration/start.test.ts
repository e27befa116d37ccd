// The first start as a new user meets it: a start that cannot bind names PORT or HOST and leaves
// nothing behind; the Demo App's credentials are in data/demo.env (never on the screen); the README's
// walkthrough runs, twice, against a chain on a port of its own; GET / points to the docs.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config/config.js';
import pino from 'pino';
import { openCore } from '../../src/boot/open-core.js';
import { startService, type Service } from '../../src/boot/service.js';
import { freePort, freshPostgres, tempDir } from '../helpers/env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);

/** What a function writes to stderr while it runs (the banners go there). */
async function capturingStderr<T>(fn: () => Promise<T>): Promise<{ value: T; stderr: string }> {
  const chunks: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => (chunks.push(String(chunk)), true)) as typeof process.stderr.write;
  try {
    return { value: await fn(), stderr: chunks.join('') };
  } finally {
    process.stderr.write = write;
  }
}

describe('first start', () => {
  it('a taken PORT is named, and the start leaves no Demo App, demo.env or operator token behind', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    const dataDir = tempDir();
    try {
      const config = loadConfig({ PORT: String(port), ANVIL_PORT: String(await freePort()), DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
      await assert.rejects(startService(config), new RegExp(`PORT ${port} is already in use on 127\\.0\\.0\\.1.*set PORT to a free port`));
      assert.deepEqual(
        fs.readdirSync(dataDir).filter((f) => ['demo.env', 'operator.token', 'mintworks.sqlite', 'chain.json'].includes(f)),
        [],
      );
    } finally {
      blocker.close();
    }
  });

  it("a HOST that is not this machine's is named", async () => {
    // 192.0.2.1 (TEST-NET-1) is never a local address: binding it fails, and no packet is sent.
    const config = loadConfig({
      HOST: '192.0.2.1',
      PORT: String(await freePort()),
      ANVIL_PORT: String(await freePort()),
      DATA_DIR: tempDir(),
      LOG_LEVEL: 'silent',
    });
    await assert.rejects(startService(config), /HOST 192\.0\.2\.1 is not an address of this machine/);
  });

  describe('with the Demo App', () => {
    const cwd = tempDir();
    const dataDir = path.join(cwd, 'data');
    let svc: Service;
    let stderr: string;

    before(async () => {
      // Not the default chain port: the walkthrough must find the chain through MW_RPC_URL.
      const config = loadConfig({
        PORT: String(await freePort()),
        ANVIL_PORT: String(await freePort()),
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        LOG_FORMAT: 'json',
      });
      ({ value: svc, stderr } = await capturingStderr(() => startService(config)));
    });
    after(() => svc?.stop());

    it('demo.env has the service and chain URLs and the credentials; the banners show where they are, never a secret', async () => {
      const env = Object.fromEntries(
        fs
          .readFileSync(path.join(dataDir, 'demo.env'), 'utf8')
          .split('\n')
          .filter((l) => /^MW_/.test(l))
          .map((l) => l.split(/=(.*)/s, 2) as [string, string]),
      );
      assert.equal(env.MW_URL, `${svc.url}/v1`);
      assert.equal(env.MW_RPC_URL, svc.rpcUrl);
      assert.notEqual(new URL(svc.rpcUrl).port, '8545');
      assert.equal(fs.statSync(path.join(dataDir, 'demo.env')).mode & 0o777, 0o600);
      assert.match(stderr, new RegExp(`Demo App created[\\s\\S]*${path.join(dataDir, 'demo.env').replace(/[.]/g, '\\.')}`));
      assert.match(stderr, /source .*demo\.env\n\s+curl -s -X POST "\$MW_URL\/user" -H "X-API-KEY: \$MW_API_KEY" -H "Authorization: Bearer \$MW_TOKEN"/);
      assert.match(stderr, /Developer console .*\/console[\s\S]*operator\.token/);
      const operatorToken = fs.readFileSync(path.join(dataDir, 'operator.token'), 'utf8').trim();
      for (const secret of [env.MW_API_KEY, env.MW_API_SECRET, env.MW_TOKEN, operatorToken]) {
        assert.ok(secret && secret.length > 10);
        assert.ok(!stderr.includes(secret), 'no credential on stderr');
      }
    });

    it('the README walkthrough runs as written, twice', async () => {
      const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
      const section = readme.slice(readme.indexOf('## Walkthrough (curl)'));
      const script = /```sh\n([\s\S]*?)```/.exec(section)![1];
      assert.doesNotMatch(script, /^\s*(USER|HOME|PATH|PWD|UID|HOSTNAME|SHELL|RANDOM)=/m, 'no shell-reserved names assigned');
      assert.doesNotMatch(script, /8545/);
      for (const round of [1, 2]) {
        const { stdout, stderr } = await run('bash', ['-euo', 'pipefail', '-c', script], { cwd, timeout: 90_000 });
        assert.equal(stderr, '', `round ${round}: nothing on stderr`);
        const wallet = /"result":"0x0{24}([0-9a-f]{40})"/.exec(stdout);
        assert.ok(wallet, `round ${round}: ownerOf answered: ${stdout}`);
        assert.notEqual(wallet[1], '0'.repeat(40));
        const asset = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{"success"'))!);
        assert.equal(asset.data.is_minted, true);
      }
    });

    it('GET / points to the docs and the console (JSON, or a page for a browser)', async () => {
      const json = await (await fetch(`${svc.url}/`)).json();
      assert.equal(json.docs, `${svc.url}/docs`);
      assert.equal(json.console, `${svc.url}/console`);
      const html = await fetch(`${svc.url}/`, { headers: { accept: 'text/html' } });
      assert.equal(html.status, 200);
      assert.match(html.headers.get('content-type')!, /^text\/html/);
      const body = await html.text();
      assert.match(body, new RegExp(`href="${svc.url}/docs"`));
      assert.match(body, new RegExp(`href="${svc.url}/console"`));
    });
  });
});

describe('a database whose master key is elsewhere', () => {
  it('says where the key must come from', async () => {
    const pg = await freshPostgres();
    try {
      const first = loadConfig({ DATA_DIR: tempDir(), DATABASE_URL: pg.url, LOG_LEVEL: 'silent' });
      await (await openCore(first, pino({ level: 'silent' }))).store.close();
      const elsewhere = loadConfig({ DATA_DIR: tempDir(), DATABASE_URL: pg.url, LOG_LEVEL: 'silent' });
      await assert.rejects(
        openCore(elsewhere, pino({ level: 'silent' })),
        /does not open with the master key from .*master\.key \(MASTER_KEY is not set\).*also with DATABASE_URL: in DATA_DIR.*Set MASTER_KEY/,
      );
      const key = fs.readFileSync(path.join(first.dataDir, 'master.key'), 'utf8').trim();
      await (await openCore({ ...elsewhere, masterKeyHex: key }, pino({ level: 'silent' }))).store.close();
    } finally {
      await pg.drop();
    }
  });
});

describe('npm start and the build', () => {
  it('a current build is not rebuilt; a changed source makes it stale', async () => {
    const check = () =>
      run(process.execPath, [path.join(root, 'scripts/build-if-stale.mjs'), '--check']).then(
        () => 'current',
        () => 'stale',
      );
    assert.equal(await check(), 'current', 'the test run builds first (npm test)');
    const stamp = path.join(root, 'dist', '.build-hash');
    const saved = fs.readFileSync(stamp, 'utf8');
    try {
      fs.writeFileSync(stamp, 'not the hash of the sources\n');
      assert.equal(await check(), 'stale');
    } finally {
      fs.writeFileSync(stamp, saved);
    }
    assert.equal(await check(), 'current');
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    assert.equal(pkg.scripts.prestart, 'node scripts/build-if-stale.mjs');
  });
});
