// docs/production.md's HSM path, run as written: the walkthrough with step 3b's blocks (a SoftHSM2
// token, its PINs, the custody settings, no MASTER_KEY) in place of step 2's, up to the first mint on
// two API and two worker processes; the keys are in the token, no master key on disk or in the
// settings. And the walkthrough's waits: a block whose process died fails at once, non-zero, with the
// process's last log lines (not after its timeout, not silently).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, PG_BASE, SHARED_PG_POOL_SIZE, tempDir } from '../helpers/env.js';
import { SOFTHSM_MODULE } from '../helpers/softhsm.js';
import { alive, runWalkthroughBlock, walkthroughBlocks, walkthroughPids, withProcessLogs } from '../helpers/walkthrough.js';

const blocks = walkthroughBlocks();

/** A walkthrough of its own: MW_HOME, database, ports; runs blocks by name and takes everything down after. */
function walkthrough(label: string) {
  const home = path.join(tempDir(`mintworks-${label}-`), 'home');
  const seen = new Set<number>();
  let env: Record<string, string> = {};
  return {
    home,
    async setup() {
      const [api1, api2, chainPort] = [await freePort(), await freePort(), await freePort()];
      env = {
        MW_HOME: home,
        MW_PG_ADMIN: `${PG_BASE}/postgres`,
        MW_PG_HOST: new URL(PG_BASE).host,
        MW_DB: `mw_${label.replace(/\W/g, '_')}_${process.pid}_${Date.now().toString(36)}`,
        MW_PUBLIC_URL: `http://127.0.0.1:${api1}`,
        MW_API_PORTS: `${api1} ${api2}`,
        MW_CHAIN_PORT: String(chainPort),
        DATABASE_POOL_SIZE: SHARED_PG_POOL_SIZE, // the processes inherit it (the walkthrough's files leave it out)
      };
    },
    run(name: string): Promise<string> {
      const code = blocks.get(name);
      assert.ok(code, `docs/production.md has no walkthrough block "${name}"`);
      return runWalkthroughBlock(name, code, env)
        .catch((err) => {
          throw withProcessLogs(home, err);
        })
        .finally(() => {
          for (const pid of walkthroughPids(home)) seen.add(pid);
        });
    },
    async down() {
      if (fs.existsSync(path.join(home, 'walkthrough.sh')) && blocks.has('teardown'))
        await this.run('teardown').catch((err) => process.stdout.write(`# teardown: ${(err as Error).message}\n`));
      for (const pid of seen) if (alive(pid)) process.kill(pid, 'SIGKILL');
      return [...seen];
    },
  };
}

describe("docs/production.md's HSM path (SoftHSM2), run as written", () => {
  const w = walkthrough('prod-hsm');
  after(() => w.down());

  it('runs with the keys in the token and no MASTER_KEY, up to a first mint on two API and two worker processes', async () => {
    await w.setup();
    for (const name of ['settings', 'postgres', 'env']) await w.run(name);
    const token = await w.run('hsm-token');
    assert.match(token, /Label: +mintworks/, token);
    const settings = await w.run('hsm-settings');
    assert.match(settings, /^KEY_CUSTODY=pkcs11$/m, settings);
    assert.match(settings, /^SOFTHSM2_CONF=.*softhsm2\.conf$/m, settings);
    const secrets = fs.readFileSync(path.join(w.home, 'secrets', 'secrets.env'), 'utf8');
    assert.doesNotMatch(secrets, /MASTER_KEY/);
    assert.equal(fs.statSync(path.join(w.home, 'secrets', 'hsm-pin')).mode & 0o777, 0o600);

    await w.run('chain');
    const firstApi = await w.run('first-api');
    assert.match(firstApi, /fund deployer 0x[0-9a-fA-F]{40} on chain 31337/, firstApi);
    await w.run('fund');
    const processes = await w.run('processes');
    assert.equal((processes.match(/"msg":"workers ready"/g) ?? []).length, 2, processes);
    const firstMint = await w.run('first-mint');
    assert.match(firstMint, /"is_minted": true/, firstMint);
    assert.match(firstMint, /token_uri answers 200/, firstMint);

    // The chain accounts' keys are in the token, as OpenSC lists them; no master key on disk.
    const pin = fs.readFileSync(path.join(w.home, 'secrets', 'hsm-pin'), 'utf8').trim();
    const objects = execFileSync(
      'pkcs11-tool',
      ['--module', SOFTHSM_MODULE, '--token-label', 'mintworks', '--login', '--pin', pin, '--list-objects', '--type', 'privkey'],
      { env: { ...process.env, SOFTHSM2_CONF: path.join(w.home, 'softhsm', 'softhsm2.conf') }, encoding: 'utf8' },
    );
    assert.match(objects, /label:\s+mintworks:.*:deployer/, objects);
    assert.match(objects, /label:\s+mintworks:.*:relayer:/, objects);
    assert.equal(fs.existsSync(path.join(w.home, 'data', 'master.key')), false, 'no master.key in DATA_DIR');

    const pids = await w.down();
    assert.deepEqual(pids.filter(alive), [], 'nothing of the walkthrough is left running');
    assert.equal(fs.existsSync(w.home), false);
  });
});

describe("the walkthrough's waits", () => {
  const w = walkthrough('prod-dies');
  after(() => w.down());

  it('a block whose process dies fails at once, non-zero, with the last lines of its log', async () => {
    await w.setup();
    await w.run('settings');
    // Settings a process cannot start with: a database that is not there.
    fs.mkdirSync(path.join(w.home, 'secrets'), { recursive: true });
    fs.writeFileSync(
      path.join(w.home, 'secrets', 'secrets.env'),
      `MASTER_KEY=${'ab'.repeat(32)}\nOPERATOR_TOKEN=${'cd'.repeat(32)}\nDATABASE_URL=postgres://nobody@127.0.0.1:1/none\n`,
    );
    await w.run('env');
    const t0 = Date.now();
    const failed = await w.run('first-api').then(
      (out) => assert.fail(`the block succeeded:\n${out}`),
      (err: Error & { code?: number; out?: string }) => err,
    );
    const seconds = (Date.now() - t0) / 1000;
    assert.notEqual(failed.code, 0);
    assert.match(failed.out ?? '', /api1 exited\. The last lines of .*api1\.log:/, failed.out);
    assert.match(failed.out ?? '', /DATABASE_URL|ECONNREFUSED|cannot open the database/, failed.out);
    // Not its 60 s timeout: the wait saw the process gone.
    assert.ok(seconds < 55, `the block took ${seconds.toFixed(1)} s`);
  });
});
