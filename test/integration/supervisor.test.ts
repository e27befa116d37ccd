// test:exclusive — measures timing; run with the machine to itself (scripts/run-integration.mjs).
// Under a supervisor: SIGTERM or SIGINT sent to the `npm start` process (what systemd, `docker stop` and
// `timeout` do) stops the service and its embedded chain within 15 s, and nothing is left running; the
// embedded chain killed under the service is restarted, with /health degraded meanwhile.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, tempDir, waitFor } from '../helpers/env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

/** Every descendant of `pid` (Linux). */
function descendants(pid: number): number[] {
  let kids: number[] = [];
  try {
    kids = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

async function startNpm() {
  const dataDir = tempDir('mintworks-supervisor-');
  const env = { ...process.env, PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), DATA_DIR: dataDir, LOG_LEVEL: 'warn', DEMO_APP: 'false' };
  // --ignore-scripts: the build ran before the tests; `npm start` itself is what is supervised.
  const npm = spawn('npm', ['start', '--ignore-scripts', '--silent'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  // What the service said (its warnings and errors), for the message of a test that fails.
  let stderr = '';
  let logs = '';
  npm.stderr!.on('data', (d) => (stderr += d));
  npm.stdout!.on('data', (d) => (logs = (logs + d).slice(-8000)));
  const base = `http://127.0.0.1:${env.PORT}`;
  await waitFor('health 200', async () => (await fetch(`${base}/health`).catch(() => null))?.status === 200, 60_000, 100).catch((err) => {
    npm.kill('SIGKILL');
    throw new Error(`${(err as Error).message}; npm stderr: ${stderr.slice(-2000)}`);
  });
  return { npm, base, dataDir, said: () => `npm stderr: ${stderr.slice(-2000)}\nservice log: ${logs.slice(-6000)}` };
}

describe('under a supervisor', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to npm stops the service and its chain within 15 s, leaving no process`, async () => {
      const { npm, dataDir } = await startNpm();
      const procs = descendants(npm.pid!);
      const anvilPid = Number(fs.readFileSync(path.join(dataDir, 'anvil.pid'), 'utf8').match(/\d+/)![0]);
      assert.ok(procs.includes(anvilPid), 'the embedded chain runs under npm');
      assert.ok(procs.length >= 2, `service and chain under npm: ${procs.join(', ')}`);
      const t0 = Date.now();
      npm.kill(signal);
      await waitFor('every process gone', async () => [npm.pid!, ...procs].every((p) => !alive(p)), 15_000, 100);
      process.stdout.write(`# ${signal}: all of npm, ${procs.length} processes under it, gone in ${Date.now() - t0} ms\n`);
      const stateSaved = fs.existsSync(path.join(dataDir, 'chain.json'));
      assert.ok(stateSaved, 'the chain saved its state on the way out');
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
  }

  it('a killed embedded chain is restarted: /health degraded meanwhile, then ready again', async () => {
    const { npm, base, dataDir, said } = await startNpm();
    try {
      const before = Number(fs.readFileSync(path.join(dataDir, 'anvil.pid'), 'utf8').match(/\d+/)![0]);
      process.kill(before, 'SIGKILL');
      const degraded = await waitFor(
        'health degraded',
        async () => {
          const r = await fetch(`${base}/health`).catch(() => null);
          return r && r.status !== 200 ? await r.json() : null;
        },
        10_000,
        20,
      );
      assert.equal(degraded.ready, false);
      let last = '';
      await waitFor(
        'health ready again',
        async () => {
          const r = await fetch(`${base}/health`).catch(() => null);
          last = r ? `${r.status} ${await r.text()}` : 'no answer';
          return r?.status === 200;
        },
        30_000,
        100,
      ).catch((err) => {
        throw new Error(`${(err as Error).message}; last /health: ${last}\n${said()}`);
      });
      const after = Number(fs.readFileSync(path.join(dataDir, 'anvil.pid'), 'utf8').match(/\d+/)![0]);
      assert.notEqual(after, before, 'a new chain process');
      assert.ok(alive(npm.pid!), 'the service kept running');
    } finally {
      npm.kill('SIGTERM');
      await waitFor('npm gone', async () => !alive(npm.pid!), 20_000, 100).catch(() => npm.kill('SIGKILL'));
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
