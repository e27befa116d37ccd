// What an operator reads in the logs: `mintworks ready` once; Ctrl-C (SIGINT to the whole process group,
// the embedded chain included) stops without an ERROR; JSON lines never carry a key twice; the console's
// polling reads at debug, not info; a webhook delivery the outbound guard refuses is logged.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { freePort, tempDir, waitFor } from '../helpers/env.js';
import { loadConfig } from '../../src/config/config.js';
import { startService, type Service } from '../../src/boot/service.js';
import { createApp } from '../../src/services/apps/registry.js';
import { outboundTestHooks } from '../../src/net/outbound.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Keys that a JSON log line carries more than once at its top level. */
function repeatedKeys(line: string): string[] {
  const seen = new Set<string>();
  const repeated: string[] = [];
  // JSON.parse keeps the last of repeated keys: the line's text is scanned for its top-level keys.
  let depth = 0;
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === '"') {
      let j = i + 1;
      while (line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      const s = line.slice(i + 1, j);
      i = j + 1;
      if (depth === 1 && line[i] === ':') {
        if (seen.has(s)) repeated.push(s);
        seen.add(s);
      }
      continue;
    }
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    i++;
  }
  return repeated;
}

describe('operator logs', () => {
  let svc: Service | null = null;
  after(async () => {
    outboundTestHooks.resolve = null;
    await svc?.stop();
  });

  it('npm start: ready once, Ctrl-C without an ERROR, no key twice on a line', { timeout: 120_000 }, async () => {
    const dataDir = tempDir('mintworks-logs-');
    const env = {
      ...process.env,
      PORT: String(await freePort()),
      ANVIL_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      DEMO_APP: 'false',
    };
    // A process group of its own, as a shell gives a foreground job: Ctrl-C is SIGINT to the group.
    const proc = spawn(process.execPath, [path.join(root, 'dist/main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    proc.stdout!.on('data', (d) => (out += d));
    proc.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    try {
      // `mintworks ready` is said once /health answers 200, not while it still answers 503.
      await waitFor('mintworks ready', async () => out.includes('"mintworks ready"'), 90_000, 20);
      const health = await fetch(`http://127.0.0.1:${env.PORT}/health`);
      assert.equal(health.status, 200, `/health right after "mintworks ready": ${await health.text()}`);
      assert.ok(out.indexOf('"mintworks listening"') < out.indexOf('"mintworks ready"'), 'listening, then ready');
      await waitFor('workers ready', async () => out.includes('"workers ready"'), 90_000, 100);
      await waitFor('health 200', async () => (await fetch(`http://127.0.0.1:${env.PORT}/health`).catch(() => null))?.status === 200, 30_000, 100);
    } catch (err) {
      process.kill(-proc.pid!, 'SIGKILL');
      throw new Error(`${(err as Error).message}\n${out.slice(-3000)}`);
    }
    process.kill(-proc.pid!, 'SIGINT');
    assert.equal(await exited, 0, out.slice(-3000));
    const lines = out.split('\n').filter((l) => l.startsWith('{'));
    const parsed = lines.map((l) => JSON.parse(l) as { level: number; msg: string });
    assert.equal(parsed.filter((l) => l.msg === 'mintworks ready').length, 1, 'mintworks ready once');
    const errors = parsed.filter((l) => l.level >= 50);
    assert.deepEqual(errors, [], 'no ERROR on Ctrl-C');
    assert.ok(parsed.some((l) => l.msg === 'stopped'));
    for (const l of lines) assert.deepEqual(repeatedKeys(l), [], l);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('console reads at debug; a delivery refused by the outbound guard is logged', { timeout: 60_000 }, async () => {
    const captured: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n')) if (l) captured.push(JSON.parse(l));
        cb();
      },
    });
    const log = pino({ level: 'debug' }, sink);
    const config = loadConfig({
      PORT: String(await freePort()),
      ANVIL_PORT: String(await freePort()),
      DATA_DIR: tempDir(),
      DEMO_APP: 'false',
      LOG_LEVEL: 'debug',
    });
    svc = await startService(config, log);
    const op = { authorization: `Bearer ${config.operatorToken ?? svc.ctx.installation.operatorToken}`, 'content-type': 'application/json' };
    // A production App: on a service that listens on loopback only, a development App may deliver to
    // this machine (src/webhooks/local-delivery.ts); a production App never does.
    const app = await createApp(svc.ctx, 'Logs', 'production');
    // A name that resolves to a public address when the webhook is set, to this machine when it is
    // sent to (DNS rebinding): refused at delivery by the outbound guard.
    let rebound = false;
    outboundTestHooks.resolve = async () => [{ address: rebound ? '127.0.0.1' : '93.184.216.34', family: 4 }];
    const set = await fetch(`${svc.url}/admin/v1/apps/${app.uid}/webhook`, {
      method: 'PUT',
      headers: op,
      body: JSON.stringify({ url: 'https://hooks.example.test/in' }),
    });
    assert.ok(set.status === 201 || set.status === 200, await set.text());
    rebound = true;
    const test = await fetch(`${svc.url}/console/api/apps/${app.uid}/webhook/test`, { method: 'POST', headers: op, body: '{}' });
    assert.equal(test.status, 201, await test.text());
    const line = await waitFor('the refusal logged', async () => captured.find((l) => l.msg === 'webhook delivery refused by the outbound guard'), 20_000, 50);
    assert.equal(line.level, 40);
    assert.equal(line.app, app.uid);
    assert.match(String(line.reason), /loopback|private|local/i);

    for (const p of ['/console/api/session', `/console/api/apps/${app.uid}/users`]) {
      const r: Response = await fetch(`${svc.url}${p}`, { headers: op });
      assert.equal(r.status, 200, p);
    }
    const post = await fetch(`${svc.url}/console/api/apps`, { method: 'POST', headers: op, body: JSON.stringify({ name: 'Logged' }) });
    assert.equal(post.status, 201, await post.text());
    await waitFor('request lines', async () => captured.filter((l) => l.msg === 'request' && String(l.url).startsWith('/console/api/')).length >= 3, 5_000, 20);
    const requests = captured.filter((l) => l.msg === 'request' && String(l.url).startsWith('/console/api/'));
    for (const r of requests) assert.equal(r.level, r.method === 'GET' ? 20 : 30, JSON.stringify(r));
  });
});
