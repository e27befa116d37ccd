// SIGTERM under load: the service (dist/main.js, SQLite, the embedded chain, the workers in their thread)
// is stopped while webhook deliveries are in flight to a slow receiver. After "shutting down" no line is
// a warning or an error (no EBADF from a flush after the database closed, no operator alert from the
// chain stopping under the workers), the process exits 0, and after a restart every event is delivered:
// nothing was lost. The log of the whole run holds none of the secrets it created (the operator token,
// an API secret, a webhook secret, the secret paths and queries of webhook and alert URLs, one of them
// logged by a 410); a keep-alive connection whose request was answered during the stop is closed by the
// server instead of holding the stop up for the keep-alive time; and an ALERT_WEBHOOK_URL the outbound
// guard refuses stops the start.
import { after, describe, it } from 'node:test';
import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
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
      if (req.url?.startsWith('/gone/')) {
        res.statusCode = 410;
        res.end('gone');
      } else if (slow) setTimeout(answer, 400);
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
    const secret = (what: string) => `${what}${randomBytes(8).toString('hex')}`;
    const secrets = { path: secret('PATHSECRET'), query: secret('QUERYSECRET'), gone: secret('GONESECRET'), alert: secret('ALERTSECRET') };
    const origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const hook = `${origin}/hook/${secrets.path}?token=${secrets.query}`;
    const alertSecret = `whsec_${randomBytes(32).toString('base64')}`;
    const env = {
      ALERT_WEBHOOK_URL: `${origin}/alert/${secrets.alert}`,
      ALERT_WEBHOOK_SECRET: alertSecret,
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
    const webhook = await call('PUT', `/admin/v1/apps/${app.uid}/webhook`, { url: hook });
    // Another App's endpoint answers 410 Gone: the dispatcher disables it and says so, naming the endpoint.
    const gone = await call('POST', '/admin/v1/apps', { name: 'Gone', environment: 'development' });
    await call('PUT', `/admin/v1/apps/${gone.uid}/webhook`, { url: `${origin}/gone/${secrets.gone}` });
    await call('POST', `/console/api/apps/${gone.uid}/webhook/test`);
    await waitFor('the 410 said', async () => lines().some((l) => l.includes('410 Gone')), 60_000, 200);
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
    const stopped = new Promise((r) => service.once('exit', r));
    service.kill('SIGTERM');
    await stopped;

    // No secret of the run in any line of its log.
    const all = fs.readFileSync(log, 'utf8');
    const created = { ...secrets, operator: token, api_secret: app.api_secret, webhook_secret: webhook.secret, alert_secret: alertSecret };
    for (const [what, value] of Object.entries(created)) {
      assert.ok(typeof value === 'string' && value.length >= 16, what);
      assert.ok(!all.includes(value), `the log holds the ${what}`);
    }
    assert.ok(all.includes(`${origin}/<redacted>`), 'the endpoint is named by its origin');
  });

  it('a keep-alive connection whose request was in flight at the stop does not hold the stop up', { timeout: 120_000 }, async () => {
    const other = tempDir();
    const env = { DATA_DIR: other, PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), LOG_FORMAT: 'json', DEMO_APP: 'false' };
    const log = path.join(other, 'service.log');
    const said = (text: string) => async () => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes(text);
    const child = startService(env);
    children.push(child);
    await waitFor('ready', said('"mintworks ready"'), 120_000, 200);
    const token = fs.readFileSync(path.join(other, 'operator.token'), 'utf8').trim();
    // A request whose headers are in and whose body is not: routed (so not refused as the stop's new
    // requests are), answered once its body arrives, after the stop began.
    const body = JSON.stringify({ name: 'In flight', environment: 'development' });
    const socket = net.connect(Number(env.PORT), '127.0.0.1');
    await once(socket, 'connect');
    let received = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
    const serverEnded = once(socket, 'end');
    socket.write(
      `POST /admin/v1/apps HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nConnection: keep-alive\r\n\r\n${body.slice(0, 10)}`,
    );
    // Answered on another connection after this one's headers were written: the server has read them.
    assert.equal((await fetch(`http://127.0.0.1:${env.PORT}/health`)).status, 200);
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    await waitFor('"shutting down" said', said('"shutting down"'), 30_000, 50);
    socket.write(body.slice(10));
    // The client keeps its connection open as keep-alive clients do (Fastify's keep-alive is 72 s):
    // the server closes it soon after the answer, and the process exits well before that.
    let timer: NodeJS.Timeout | undefined;
    const kept = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the server kept the idle connection open')), 30_000)));
    await Promise.race([serverEnded, kept]).finally(() => clearTimeout(timer));
    assert.match(received, /^HTTP\/1\.1 201 /);
    socket.destroy();
    assert.equal(await exited, 0);
  });

  it('an ALERT_WEBHOOK_URL the outbound guard refuses stops the start, with a clear message and no secret', { timeout: 120_000 }, async () => {
    const other = tempDir();
    const hidden = `ALERTSECRET${randomBytes(8).toString('hex')}`;
    const child = startService({
      DATA_DIR: other,
      PORT: String(await freePort()),
      ANVIL_PORT: String(await freePort()),
      LOG_FORMAT: 'json',
      DEMO_APP: 'false',
      ALERT_WEBHOOK_URL: `http://10.1.2.3/alert/${hidden}`,
      ALERT_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    });
    children.push(child);
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    assert.equal(code, 1);
    const out = fs.readFileSync(path.join(other, 'service.log'), 'utf8');
    assert.match(out, /ALERT_WEBHOOK_URL \(http:\/\/10\.1\.2\.3\/<redacted>\) is refused by the outbound guard: private address/);
    assert.ok(!out.includes(hidden), 'the path is not logged');
  });
});
