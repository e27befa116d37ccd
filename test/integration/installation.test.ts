// What an installation is, and who uses it: a DATA_DIR is one service's (a second service, a restore
// or another's port are refused naming the process), a command that only reads never creates an
// installation, and the processes of a PostgreSQL installation agree on its public URL (a worker
// process without PUBLIC_URL takes the recorded one; one with another refuses naming both, until
// `mintworks config set public-url`). A second installation in the same DATA_DIR keeps the first's
// demo.env.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort, freshPostgres, tempDir, waitFor } from '../helpers/env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const main = path.join(root, 'dist/main.js');
const cli = path.join(root, 'bin/mintworks.js');

interface Run {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function run(args: string[], env: Record<string, string>): Run {
  const child = spawn(process.execPath, args, { env: { ...process.env, LOG_FORMAT: 'json', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, output: () => out, exited };
}

const cliRun = (args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });

describe('installations and the processes that use them', () => {
  const running: Run[] = [];
  const start = (args: string[], env: Record<string, string>) => {
    const r = run(args, env);
    running.push(r);
    return r;
  };
  const stop = async (r: Run) => {
    if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGTERM');
    await r.exited;
  };
  after(async () => {
    for (const r of running) await stop(r);
  });

  describe('a SQLite installation', () => {
    let dataDir = '';
    let first: Run;
    let port = 0;
    before(async () => {
      dataDir = path.join(tempDir('mintworks-inst-'), 'data');
      port = await freePort();
      first = start([main], { DATA_DIR: dataDir, PORT: String(port), ANVIL_PORT: String(await freePort()) });
      await waitFor('the first service', async () => first.output().includes('"msg":"mintworks ready"'), 60_000, 50);
    });

    it('refuses a second service on its DATA_DIR, naming the first', async () => {
      const second = start([main], { DATA_DIR: dataDir, PORT: String(await freePort()), ANVIL_PORT: String(await freePort()) });
      assert.equal(await second.exited, 1);
      assert.match(second.output(), new RegExp(`another Mintworks \\(pid ${first.child.pid}\\) is using DATA_DIR ${dataDir.replace(/[/.]/g, '\\$&')}`));
      // The first one is untouched: it becomes ready (its workers deploy the forwarder on its chain).
      await waitFor('the first service ready', async () => (await fetch(`http://127.0.0.1:${port}/health`)).status === 200, 60_000, 50);
    });

    it('says which Mintworks holds a PORT another installation asks for', async () => {
      const other = start([main], { DATA_DIR: path.join(tempDir('mintworks-inst-'), 'data'), PORT: String(port), ANVIL_PORT: String(await freePort()) });
      assert.equal(await other.exited, 1);
      assert.match(other.output(), new RegExp(`PORT ${port} is already in use on 127.0.0.1 by another Mintworks \\(pid ${first.child.pid}, DATA_DIR `));
    });

    it('refuses a restore into the DATA_DIR in use', async () => {
      const bk = path.join(tempDir('mintworks-inst-bk-'), 'b');
      const b = cliRun(['backup', '--out', bk], { DATA_DIR: dataDir });
      assert.equal(b.status, 0, b.stderr);
      const r = cliRun(['restore', '--from', bk, '--force'], { DATA_DIR: dataDir });
      assert.equal(r.status, 2);
      assert.match(r.stderr, new RegExp(`^another Mintworks \\(pid ${first.child.pid}\\) is using DATA_DIR`));
    });

    it('takes its lock with it when killed -9: the next service starts', async () => {
      first.child.kill('SIGKILL');
      await first.exited;
      const next = start([main], { DATA_DIR: dataDir, PORT: String(await freePort()), ANVIL_PORT: String(await freePort()) });
      await waitFor('the next service', async () => next.output().includes('"msg":"mintworks ready"') || next.child.exitCode !== null, 60_000, 50);
      assert.match(next.output(), /"msg":"mintworks ready"/, next.output());
      await stop(next);
    });
  });

  it('a command that only reads creates nothing where there is no installation', () => {
    const nowhere = path.join(tempDir('mintworks-inst-'), 'nothing-here');
    for (const args of [
      ['app', 'list'],
      ['collection', 'list', '--app', '123456789012'],
      ['token', '--app', '123456789012'],
      ['webhook', 'show', '--app', '123456789012'],
      ['reward', 'list', '--app', '123456789012'],
      ['backup', '--out', path.join(nowhere, '..', 'bk')],
      ['config', 'show'],
    ]) {
      const r = cliRun(args, { DATA_DIR: nowhere });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.equal(r.stderr.trim(), `no installation at ${nowhere} (set DATA_DIR or DATABASE_URL)`);
      assert.equal(fs.existsSync(nowhere), false, `${args.join(' ')} created ${nowhere}`);
    }
    const json = cliRun(['app', 'list', '--json'], { DATA_DIR: nowhere });
    assert.equal(json.status, 2);
    assert.deepEqual(JSON.parse(json.stdout), { error: `no installation at ${nowhere} (set DATA_DIR or DATABASE_URL)` });
  });

  describe('a PostgreSQL installation of several processes', () => {
    let pgdb: Awaited<ReturnType<typeof freshPostgres>>;
    after(async () => pgdb?.drop());

    it('a worker on the DATA_DIR of an API process that runs the embedded chain is refused, instead of taking over that chain', async () => {
      const db = await freshPostgres();
      try {
        const dataDir = path.join(tempDir('mintworks-inst-pg-'), 'data');
        const anvilPort = String(await freePort());
        const common = {
          DATABASE_URL: db.url,
          DATA_DIR: dataDir,
          MASTER_KEY: 'ab'.repeat(32),
          OPERATOR_TOKEN: 'operator-token-for-the-installation-test',
          ANVIL_PORT: anvilPort,
        };
        const api = start([main], { ...common, WORKERS: 'false', PORT: String(await freePort()) });
        // Listening, not ready: no worker deploys this chain's forwarder.
        await waitFor('the API process', async () => api.output().includes('"msg":"mintworks listening"'), 60_000, 50);
        const worker = start([main], { ...common, API: 'false', DEMO_APP: 'false' });
        assert.equal(await worker.exited, 1);
        assert.match(worker.output(), new RegExp(`another Mintworks \\(pid ${api.child.pid}\\) is using the embedded chain of DATA_DIR`));
        // The API's chain is still its own and still answers.
        const rpc = await fetch(`http://127.0.0.1:${anvilPort}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
        });
        assert.equal(rpc.status, 200);
        await stop(api);
      } finally {
        await db.drop();
      }
    });

    it("agrees on the public URL whatever order the processes start in, and keeps another installation's demo.env", async () => {
      pgdb = await freshPostgres();
      const dataDir = path.join(tempDir('mintworks-inst-pg-'), 'data');
      // Another installation used this DATA_DIR before: its demo.env stays as it was.
      fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      fs.writeFileSync(path.join(dataDir, 'demo.env'), 'MW_APP=999999999999\n', { mode: 0o600 });
      const chainPort = await freePort();
      const apiPort = await freePort();
      const common = {
        DATABASE_URL: pgdb.url,
        DATA_DIR: dataDir,
        MASTER_KEY: 'ef'.repeat(32),
        OPERATOR_TOKEN: 'operator-token-for-the-installation-test',
        CHAIN_RPC_URL: `http://127.0.0.1:${chainPort}`,
      };
      const chain = start([cli, 'chain', 'start', '--port', String(chainPort), '--dir', path.join(dataDir, '..', 'chain')], {});
      await waitFor('the chain', async () => chain.output().includes('ready at'), 30_000, 50);

      // A worker process first, with nothing recorded and no PUBLIC_URL: it cannot know the URL to mint with.
      const early = start([main], { ...common, API: 'false' });
      assert.equal(await early.exited, 1);
      assert.match(early.output(), /PUBLIC_URL is not set and no API process of this installation has recorded one yet/);

      const api = start([main], { ...common, WORKERS: 'false', PORT: String(apiPort), PUBLIC_URL: `http://127.0.0.1:${apiPort}/` });
      await waitFor('the API process', async () => api.output().includes('"msg":"mintworks listening"'), 60_000, 50);
      assert.equal(fs.readFileSync(path.join(dataDir, 'demo.env'), 'utf8'), 'MW_APP=999999999999\n');
      assert.equal(fs.readdirSync(dataDir).filter((f) => /^demo-\d+\.env$/.test(f)).length, 1, "this installation's Demo App is in a file of its own");

      // A worker without PUBLIC_URL takes the recorded one, and says so instead of a URL it does not serve.
      const worker = start([main], { ...common, API: 'false', DEMO_APP: 'false' });
      await waitFor('the worker process', async () => worker.output().includes('"msg":"workers ready"') || worker.child.exitCode !== null, 60_000, 50);
      assert.match(worker.output(), new RegExp(`"public_url":"http://127.0.0.1:${apiPort}"[^\\n]*"msg":"workers ready"`), worker.output());
      assert.doesNotMatch(worker.output(), /"msg":"mintworks (ready|listening)"/);

      // Funded, the worker deploys the Demo App's collection with the recorded URL as its base token URI.
      const fund = cliRun(['chain', 'fund'], common);
      assert.equal(fund.status, 0, fund.stderr);
      const db = new pg.Client({ connectionString: pgdb.url });
      await db.connect();
      const deployed = await waitFor(
        'the demo collection deployed',
        async () => (await db.query<{ uid: string }>("select uid from collections where status = 'deployed'")).rows[0],
        60_000,
        100,
      );
      await db.end();

      // Another explicit URL is refused, naming both values.
      const wrong = start([main], { ...common, API: 'false', DEMO_APP: 'false', PUBLIC_URL: 'http://127.0.0.1:8080' });
      assert.equal(await wrong.exited, 1);
      assert.match(wrong.output(), new RegExp(`PUBLIC_URL is http://127.0.0.1:8080, but this installation's public URL is http://127.0.0.1:${apiPort}`));

      // Told to change it, the next process with the new URL starts.
      const set = cliRun(['config', 'set', 'public-url', 'http://127.0.0.1:8080', '--yes'], common);
      assert.equal(set.status, 0, set.stderr);
      assert.match(set.stdout, new RegExp(`Public URL recorded: http://127.0.0.1:8080 \\(was http://127.0.0.1:${apiPort}\\)`));
      assert.match(set.stdout, /1 deployed collection\(s\) keep .* a setBaseURI transaction to http:\/\/127\.0\.0\.1:8080\/metadata\/<collection>\/ is queued/);
      // A worker sends it: the contract's base URI follows the new URL.
      await waitFor('the base URI re-pointed', async () => worker.output().includes('"msg":"collection base token URI re-pointed"'), 60_000, 100);
      assert.match(worker.output(), new RegExp(`"collection":"${deployed.uid}","base_uri":"http://127.0.0.1:8080/metadata/${deployed.uid}/"`));
      const show = cliRun(['config', 'show', '--json'], common);
      assert.equal(JSON.parse(show.stdout).public_url, 'http://127.0.0.1:8080');
      const again = start([main], { ...common, API: 'false', DEMO_APP: 'false', PUBLIC_URL: 'http://127.0.0.1:8080' });
      await waitFor('the worker with the new URL', async () => again.output().includes('"msg":"workers ready"') || again.child.exitCode !== null, 60_000, 50);
      assert.match(again.output(), /"msg":"workers ready"/, again.output());

      // Another operator token is refused too (its digest only is named).
      const token = start([main], { ...common, API: 'false', DEMO_APP: 'false', OPERATOR_TOKEN: 'another-operator-token-0123456789' });
      assert.equal(await token.exited, 1);
      assert.match(token.output(), /OPERATOR_TOKEN differs from this installation's \(sha-256 [0-9a-f]{12}… here, [0-9a-f]{12}… recorded\)/);
      assert.doesNotMatch(token.output(), /another-operator-token/);
      for (const r of [again, worker, api, chain]) await stop(r);
    });
  });
});
