// SIGTERM under load: the service (dist/main.js, SQLite, the embedded chain, the workers in their thread)
// is stopped while webhook deliveries are in flight to a slow receiver. After "shutting down" no line is
// a warning or an error (no EBADF from a flush after the database closed, no operator alert from the
// chain stopping under the workers), the process exits 0, and after a restart every event is delivered:
// nothing was lost.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { freePort, tempDir, waitFor } from '../helpers/env.js';
import { startService, stopAll } from '../helpers/process-group.js';

describe('SIGTERM under load', () => {
  const dir = tempDir();
  const received = new Set<string>();
  let slow = true;
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const answer = () => {
        try {
          received.add(JSON.parse(body).event_id);
        } catch {}
        res.end('ok');
      };
      if (slow) setTimeout(answer, 400);
      else answer();
    });
  });
  const children: ChildProcess[] = [];
  after(async () => {
    await stopAll(children);
    receiver.close();
  });

  it('no warning or error after "shutting down", exit 0, and every event delivered after a restart', { timeout: 300_000 }, async () => {
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const env = {
      DATA_DIR: dir,
      PORT: String(await freePort()),
      ANVIL_PORT: String(await freePort()),
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      DEMO_APP: 'false',
      OUTBOUND_ALLOW_PRIVATE: 'true',
    };
    const base = `http://127.0.0.1:${env.PORT}`;
    const log = path.join(dir, 'service.log');
    const lines = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '').split('\n').filter(Boolean);
    const start = async () => {
      const child = startService(env);
      children.push(child);
      await waitFor('ready', async () => lines().some((l) => l.includes('"mintworks ready"')), 120_000, 200);
      return child;
    };

    let service = await start();
    const token = fs.readFileSync(path.join(dir, 'operator.token'), 'utf8').trim();
    const call = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${base}${p}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      assert.ok(res.status < 300, `${method} ${p}: ${res.status} ${text}`);
      return JSON.parse(text).data;
    };
    const app = await call('POST', '/admin/v1/apps', { name: 'Load', environment: 'development' });
    await call('PUT', `/admin/v1/apps/${app.uid}/webhook`, { url: hook });
    // Test events, each sent at once: with a receiver that takes 400 ms, many are in flight at the stop.
    const sent: string[] = [];
    for (let i = 0; i < 120; i++) sent.push((await call('POST', `/console/api/apps/${app.uid}/webhook/test`)).event_id);
    const before = lines().length;
    const exited = new Promise<number | null>((r) => service.once('exit', (code) => r(code)));
    service.kill('SIGTERM');
    assert.equal(await exited, 0, 'exit code');

    const afterStop = lines().slice(before);
    const from = afterStop.findIndex((l) => l.includes('"shutting down"'));
    assert.ok(from >= 0, 'said "shutting down"');
    const bad = afterStop.slice(from).filter((l) => {
      const level = (JSON.parse(l) as { level: number }).level;
      return level >= 40 || /EBADF|alert/i.test(l);
    });
    assert.deepEqual(bad, [], 'no warning, error or alert after "shutting down"');
    assert.ok(received.size < sent.length, `deliveries were in flight at the stop (${received.size} of ${sent.length} delivered)`);

    // Restarted: every event is delivered (the ones in flight were released, not lost).
    slow = false;
    service = await start();
    await waitFor('every event delivered', async () => sent.every((id) => received.has(id)), 120_000, 200);
    service.kill('SIGTERM');
  });
});
