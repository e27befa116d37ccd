// The `mintworks` CLI on a service's DATA_DIR, and what reaches the logs.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pino from 'pino';
import { createPublicClient, http, parseAbi } from 'viem';
import { loadConfig } from '../../src/config/config.js';
import { startService, type Service } from '../../src/boot/service.js';
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
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const config = loadConfig({
      PORT: String(await freePort()),
      ANVIL_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'debug',
      DEMO_APP: 'false',
    });
    svc = await startService(config, pino({ level: 'debug' }, sink));
  });
  after(() => svc?.stop());
  const countCollections = async () =>
    Number(
      (
        await svc.ctx.db
          .selectFrom('collections')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('app create, collection create, token: one JSON object each with --json, usable against the API', async () => {
    const app = JSON.parse(await cli('app', 'create', '--name', 'CLI Game', '--environment', 'development', '--json'));
    assert.deepEqual(Object.keys(app), ['uid', 'api_key', 'api_secret']);
    assert.match(app.uid, /^\d{12}$/);
    assert.ok(app.api_secret.length >= 32);
    const coll = JSON.parse(await cli('collection', 'create', '--app', app.uid, '--name', 'Swords', '--symbol', 'SWD', '--editable', '--json'));
    assert.deepEqual(Object.keys(coll), ['uid']);
    const { token, api_key } = JSON.parse(await cli('token', '--app', app.uid, '--json'));
    assert.equal(api_key, app.api_key);
    // What `token --help` says it prints: the token alone, and {token, api_key} with --json.
    assert.match(await cli('token', '--help'), /prints the token; --json ->\s+\{token, api_key\}/);
    assert.match((await cli('token', '--app', app.uid)).trim(), /^[\w-]+\.[\w-]+\.[\w-]+$/);
    const api = new ApiClient(`${svc.url}/v1`, app.api_key, token);
    const deployed = await waitFor(
      'deployed by the running service',
      async () => {
        const c = (await api.get(`/collection/${coll.uid}`)).body.data;
        return c.status === 'deployed' ? c : null;
      },
      20_000,
    );
    assert.equal(deployed.editable_assets, true);
    assert.equal(deployed.symbol, 'SWD');
    const list = JSON.parse(await cli('app', 'list', '--json'));
    assert.ok(list.apps.some((a: any) => a.uid === app.uid));
  });

  it('collection create takes the collection options; collection update changes them, and the contract follows', async () => {
    const app = JSON.parse(await cli('app', 'create', '--name', 'Badges', '--environment', 'development', '--json')).uid;
    const receiver = '0x00000000000000000000000000000000000000cc';
    const { uid } = JSON.parse(
      await cli(
        ...['collection', 'create', '--app', app, '--name', 'Badges', '--symbol', 'BDG', '--soulbound', '--royalty-receiver', receiver, '--royalty-bps', '300'],
        ...['--description', 'Earned', '--image-url', 'https://example.com/b.png', '--external-url', 'https://example.com', '--json'],
      ),
    );
    const row = () => svc.ctx.db.selectFrom('collections').selectAll().where('uid', '=', uid).executeTakeFirstOrThrow();
    const created = await row();
    assert.deepEqual([created.soulbound, created.royalty_receiver, created.royalty_bps, created.image_url], [1, receiver, 300, 'https://example.com/b.png']);
    await waitFor('deployed', async () => (await row()).status === 'deployed', 20_000);
    const updated = JSON.parse(
      await cli('collection', 'update', '--app', app, '--collection', uid, '--royalty-bps', '100', '--clear', 'description', '--json'),
    );
    assert.equal(updated.royalty_bps, 100);
    assert.equal(updated.royalty_receiver, receiver);
    assert.equal(updated.description, null);
    assert.notEqual(updated.contract_uri, created.contract_uri);
    // The running service sends it to the contract (a job the CLI queued).
    const rpc = createPublicClient({ transport: http(svc.chain!.rpcUrl) });
    const contract = (await row()).contract_address as `0x${string}`;
    const abi = parseAbi(['function contractURI() view returns (string)', 'function royaltyInfo(uint256, uint256) view returns (address, uint256)']);
    await waitFor(
      'contract URI on chain',
      async () => (await rpc.readContract({ address: contract, abi, functionName: 'contractURI' })) === updated.contract_uri,
      20_000,
    );
    assert.equal((await rpc.readContract({ address: contract, abi, functionName: 'royaltyInfo', args: [1n, 10_000n] }))[1], 100n);
    // Refused with a clear message, and nothing changes.
    const refused = async (args: string[], message: RegExp) =>
      assert.rejects(cli(...args, '--json'), (err: any) => {
        assert.match(JSON.parse(err.stdout).error, message, args.join(' '));
        return true;
      });
    await refused(['collection', 'update', '--app', app, '--collection', uid, '--royalty-bps', '1001'], /--royalty-bps.*0 to 1000/);
    await refused(['collection', 'update', '--app', app, '--collection', uid, '--clear', 'soulbound'], /Unknown field\(s\) soulbound/);
    await refused(['collection', 'update', '--app', app, '--collection', uid], /nothing to change/);
    await refused(['collection', 'update', '--app', app, '--collection', uid, '--royalty-receiver', 'nope'], /Enter a valid address/);
    await refused(
      ['collection', 'create', '--app', app, '--name', 'X', '--symbol', 'X', '--royalty-bps', '10'],
      /royalty_receiver and royalty_bps are set together/,
    );
    assert.equal((await row()).royalty_bps, 100);
  });

  it('bad CLI input fails with a clear message naming it, exit code 2, and changes nothing', async () => {
    const collectionsBefore = await countCollections();
    const apps = JSON.parse(await cli('app', 'list', '--json')).apps.length;
    const app = JSON.parse(await cli('app', 'list', '--json')).apps[0].uid;
    const refused = async (args: string[], message: RegExp) =>
      assert.rejects(cli(...args, '--json'), (err: any) => {
        assert.equal(err.code, 2, `${args.join(' ')}: exit ${err.code}`);
        assert.match(JSON.parse(err.stdout).error, message, args.join(' '));
        return true;
      });
    await refused(['collection', 'create', '--app', '123456789012', '--name', 'X', '--symbol', 'X'], /no App with uid 123456789012/);
    await refused(['app', 'create', '--environment', 'development'], /required option '--name <name>'/);
    await refused(['app', 'create', '--name', 'X'], /required option '--environment <env>'/);
    // A misspelt required option is unknown (with the one meant), not a missing one.
    await refused(['app', 'create', '--nmae', 'X', '--environment', 'development'], /^unknown option '--nmae'\n\(Did you mean --name\?\)$/);
    await refused(['webhook', 'redeliver', '--app', app, '--evnet', 'x'], /unknown option '--evnet'[\s\S]*--event/);
    await refused(['app', 'create', '--name', 'X', '--environment', 'dev'], /'dev' is invalid.*development, production/);
    await refused(['collection', 'create', '--app', app, '--name', 'X', '--symbol', 'X', '--editabel'], /unknown option '--editabel'[\s\S]*--editable/);
    await refused(['collection', 'create', '--app', app, '--name', 'X', '--symbol', 'X', '--editable', 'maybe'], /--editable.*'maybe' is invalid/);
    await refused(['collection', 'create', '--app', app, '--name', 'X', '--symbol', 'X', '--chain', 'x'], /--chain.*'x' is invalid/);
    await refused(['webhook', 'log', '--app', app, '--limit', 'x'], /--limit.*'x' is invalid.*1 to 1000/);
    await refused(['token', '--app', app, '--expires', 'abc'], /--expires.*'abc' is invalid/);
    await refused(['app', 'list', 'extra'], /too many arguments/);
    await refused(['nope'], /unknown command 'nope'/);
    assert.equal(JSON.parse(await cli('app', 'list', '--json')).apps.length, apps, 'nothing was created');
    assert.equal(await countCollections(), collectionsBefore, 'no collection was created');
  });

  it('--editable takes yes/no; help on every command exits 0; --version prints package.json version', async () => {
    const app = JSON.parse(await cli('app', 'create', '--name', 'Flags', '--environment', 'production', '--json')).uid;
    const editable = async (...flag: string[]) => {
      const { uid } = JSON.parse(await cli('collection', 'create', '--app', app, '--name', 'E', '--symbol', 'E', ...flag, '--json'));
      return (await svc.ctx.db.selectFrom('collections').select('editable').where('uid', '=', uid).executeTakeFirstOrThrow()).editable === 1;
    };
    assert.equal(await editable('--editable'), true);
    assert.equal(await editable('--editable', 'yes'), true);
    assert.equal(await editable('--editable=no'), false);
    assert.equal(await editable(), false);
    const helps = new Set<string>();
    for (const cmd of [
      [],
      ['app', 'create'],
      ['app', 'list'],
      ['collection', 'create'],
      ['collection', 'update'],
      ['collection', 'list'],
      ['token'],
      ['webhook', 'log'],
      ['reward', 'create'],
      ['reward', 'list'],
      ['backup'],
      ['restore'],
    ]) {
      const out = await cli(...cmd, '--help');
      assert.match(out, new RegExp(`^Usage: mintworks ${cmd.join(' ')}`), cmd.join(' '));
      helps.add(out);
    }
    assert.equal(helps.size, 12, 'each command has its own help');
    const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    assert.equal((await cli('--version')).trim(), version);
  });

  it('lists as tables by default: app list, collection list, reward list; app rotate-secret', async () => {
    const app = JSON.parse(await cli('app', 'create', '--name', 'Tables', '--environment', 'development', '--json'));
    const coll = JSON.parse(await cli('collection', 'create', '--app', app.uid, '--name', 'Shields', '--symbol', 'SHD', '--json'));
    const rew = JSON.parse(
      await cli(
        'reward',
        'create',
        '--app',
        app.uid,
        '--name',
        'Gems',
        '--token-name',
        'Gem',
        '--token-symbol',
        'GEM',
        '--supply',
        '1000',
        '--chain',
        '31337',
        '--json',
      ),
    );
    assert.match(await cli('app', 'list'), new RegExp(`^UID +ENVIRONMENT +CREATED +NAME\n[\\s\\S]*${app.uid} +development +\\S+ +Tables`));
    const colls = await cli('collection', 'list', '--app', app.uid);
    assert.match(colls, /^UID +STATUS +TYPE +SYMBOL +EDITABLE +CONTRACT +NAME\n/);
    assert.match(colls, new RegExp(`${coll.uid} +(deploying|deployed) +ERC721 +SHD +no +\\S+ +Shields`));
    assert.deepEqual(
      JSON.parse(await cli('collection', 'list', '--app', app.uid, '--json')).collections.map((c: any) => c.uid),
      [coll.uid],
    );
    assert.match(await cli('reward', 'list', '--app', app.uid), new RegExp(`^UID +STATUS +SYMBOL[\\s\\S]*${rew.uid} +\\w+ +GEM +1000`));

    const before = new ApiClient(`${svc.url}/v1`, app.api_key, JSON.parse(await cli('token', '--app', app.uid, '--json')).token);
    assert.equal((await before.post('/user', {})).status, 201);
    const rotated = JSON.parse(await cli('app', 'rotate-secret', '--app', app.uid, '--json'));
    assert.equal(rotated.api_key, app.api_key);
    assert.notEqual(rotated.api_secret, app.api_secret);
    const fresh = JSON.parse(await cli('token', '--app', app.uid, '--expires', '600', '--json')).token;
    // The CLI is another process: the running API picks the new secret up within its key cache's 30 s.
    await waitFor('new secret accepted', async () => (await new ApiClient(`${svc.url}/v1`, app.api_key, fresh).post('/user', {})).status === 201, 35_000, 500);
    assert.equal((await before.post('/user', {})).status, 401, 'the old secret no longer works');
  });

  it('never logs query strings, API secrets or tokens', async () => {
    const app = JSON.parse(await cli('app', 'create', '--name', 'Secretive', '--environment', 'development', '--json'));
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

  it('logs probes of /health and /metrics at debug, other requests at info; metric names carry one prefix', async () => {
    const from = lines.length;
    assert.equal((await fetch(`${svc.url}/health`)).status, 200);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    await fetch(`${svc.url}/v1/user/1`);
    await waitFor('requests logged', async () => lines.slice(from).some((l) => l.includes('"/v1/user/1"')), 5000, 20);
    const requests = lines
      .slice(from)
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request');
    const level = (url: string) => requests.find((r) => r.url === url)?.level;
    assert.equal(level('/health'), 20);
    assert.equal(level('/metrics'), 20);
    assert.equal(level('/v1/user/1'), 30);
    assert.match(metrics, /^mintworks_process_cpu_seconds_total /m);
    assert.match(metrics, /^mintworks_nodejs_eventloop_lag_seconds /m);
    assert.doesNotMatch(metrics, /mintworks_process_process_|mintworks_process_nodejs_/);
    assert.match(metrics, /^mintworks_http_request_duration_seconds_bucket/m);
    // The Grafana dashboard kept in the repository charts metrics that exist.
    const dashboard = fs.readFileSync(path.join(root, 'docs/grafana-dashboard.json'), 'utf8');
    const names = new Set([...dashboard.matchAll(/mintworks_[a-z0-9_]+/g)].map((m) => m[0]));
    assert.ok(names.size >= 8);
    // A histogram's _bucket, _count and _sum are typed under its own name; a counter may be named *_sum itself.
    for (const n of names)
      assert.match(metrics, new RegExp(`^# TYPE (${n.replace(/_(bucket|count|sum)$/, '')}|${n}) `, 'm'), `${n} (docs/grafana-dashboard.json) is not exported`);
  });

  it('refuses to start the same DATA_DIR against another CHAIN_ID', async () => {
    await svc.stop();
    const config = loadConfig({
      PORT: String(await freePort()),
      ANVIL_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      DEMO_APP: 'false',
      CHAIN_ID: '80002',
    });
    await assert.rejects(startService(config), /CHAIN_ID is 80002, but this database .* belongs to chain 31337/);
  });
});
