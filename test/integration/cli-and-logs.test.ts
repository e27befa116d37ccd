// The `mintworks` CLI on a service's DATA_DIR, and what reaches the logs.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { startService, type Service } from '../../src/service.js';
import { ApiClient, freePort, tempDir, waitFor } from '../helpers/env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);

describe('CLI and logs', () => {
  const dataDir = tempDir();
  const lines: string[] = [];
  let svc: Service;
  const cli = async (...args: string[]) => {
    const { stdout } = await run(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args], { env: { ...process.env, DATA_DIR: dataDir } });
    return stdout;
  };

  before(async () => {
    const sink = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
    const config = loadConfig({ PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), DATA_DIR: dataDir, LOG_LEVEL: 'debug', DEMO_APP: 'false' });
    svc = await startService(config, pino({ level: 'debug' }, sink));
  });
  after(() => svc?.stop());

  it('app create, collection create, token: one JSON object each with --json, usable against the API', async () => {
    const app = JSON.parse(await cli('app', 'create', '--name', 'CLI Game', '--environment', 'development', '--json'));
    assert.deepEqual(Object.keys(app), ['uid', 'api_key', 'api_secret']);
    assert.match(app.uid, /^\d{12}$/);
    assert.ok(app.api_secret.length >= 32);
    const coll = JSON.parse(await cli('collection', 'create', '--app', app.uid, '--name', 'Swords', '--symbol', 'SWD', '--editable', '--json'));
    assert.deepEqual(Object.keys(coll), ['uid']);
    const { token, api_key } = JSON.parse(await cli('token', '--app', app.uid, '--json'));
    assert.equal(api_key, app.api_key);
    const api = new ApiClient(`${svc.url}/v1`, app.api_key, token);
    const deployed = await waitFor('deployed by the running service', async () => {
      const c = (await api.get(`/collection/${coll.uid}`)).body.data;
      return c.status === 'deployed' ? c : null;
    }, 20_000);
    assert.equal(deployed.editable_assets, true);
    assert.equal(deployed.symbol, 'SWD');
    const list = JSON.parse(await cli('app', 'list', '--json'));
    assert.ok(list.apps.some((a: any) => a.uid === app.uid));
  });

  it('bad CLI input fails with a clear message and exit code 2', async () => {
    await assert.rejects(cli('collection', 'create', '--app', '123456789012', '--name', 'X', '--symbol', 'X', '--json'), (err: any) => err.code === 2 && /no App/.test(err.stdout));
    await assert.rejects(cli('app', 'create', '--json'), (err: any) => err.code === 2 && /--name is required/.test(err.stdout));
  });

  it('never logs query strings, API secrets or tokens', async () => {
    const app = JSON.parse(await cli('app', 'create', '--name', 'Secretive', '--json'));
    const { token } = JSON.parse(await cli('token', '--app', app.uid, '--json'));
    const api = new ApiClient(`${svc.url}/v1`, app.api_key, token);
    const r = await api.get(`/user?email=a@b.c&api_key=${app.api_key}&api_secret=${app.api_secret}`);
    assert.equal(r.status, 200);
    await api.get(`/nope?api_secret=${app.api_secret}`);
    await waitFor('request logged', async () => lines.some((l) => l.includes('/v1/nope')), 5000, 50);
    const all = lines.join('');
    assert.ok(all.includes('"url":"/v1/user?<redacted>"'), 'the request is logged, without its query');
    assert.ok(!all.includes(app.api_secret), 'no API secret in logs');
    assert.ok(!all.includes(token), 'no bearer token in logs');
  });

  it('refuses to start the same DATA_DIR against another CHAIN_ID', async () => {
    await svc.stop();
    const config = loadConfig({ PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO_APP: 'false', CHAIN_ID: '80002' });
    await assert.rejects(startService(config), /CHAIN_ID is 80002, but this database .* belongs to chain 31337/);
  });
});
