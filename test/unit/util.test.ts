import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isoFromMicros, nowIso } from '../../src/util/time.js';
import { isUid, newUid } from '../../src/util/ids.js';
import { SecretBox } from '../../src/util/secretbox.js';
import { ApiError } from '../../src/util/errors.js';
import { defaultChain, installationOf, loadConfig, withRole, ConfigError } from '../../src/config/config.js';
import { redactQuery } from '../../src/http/app.js';
import { integer, table, yesNo } from '../../src/cli/args.js';
import { prettyLine } from '../../src/util/log-format.js';
import { setBounded } from '../../src/util/bounded-map.js';

describe('timestamps', () => {
  it('are ISO 8601 UTC with microseconds', () => {
    assert.equal(isoFromMicros(1708953151798296n), '2024-02-26T13:12:31.798296Z');
    assert.match(nowIso(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });
  it('strictly increase within a process', () => {
    const xs = Array.from({ length: 1000 }, nowIso);
    for (let i = 1; i < xs.length; i++) assert.ok(xs[i] > xs[i - 1]);
  });
});

describe('uids', () => {
  it('are 12-digit numeric strings', () => {
    for (let i = 0; i < 1000; i++) assert.ok(isUid(newUid()));
    assert.equal(isUid('012345678901'), false);
    assert.equal(isUid('12345678901'), false);
    assert.equal(isUid('1234567890123'), false);
  });
});

describe('secret box', () => {
  const box = new SecretBox('11'.repeat(32));
  it('round-trips and never stores the plain text', () => {
    const sealed = box.seal('s3cret-value');
    assert.ok(!sealed.includes('s3cret'));
    assert.equal(box.open(sealed), 's3cret-value');
    assert.notEqual(box.seal('x'), box.seal('x'));
  });
  it('refuses another master key with a clear message', () => {
    const sealed = box.seal('x');
    assert.throws(() => new SecretBox('22'.repeat(32)).open(sealed), /MASTER_KEY/);
  });
});

describe('error envelope', () => {
  it('single detail is an object with message last; several are an array', () => {
    const one = ApiError.notFound('User').toBody() as any;
    assert.deepEqual(one, { success: false, error: { type: 'client_error', detail: { code: 'not_found', message: 'User not found.' } } });
    const many = ApiError.validation([
      { field: 'a', code: 'required', message: 'm1' },
      { field: 'b', code: 'invalid', message: 'm2' },
    ]).toBody() as any;
    assert.equal(many.error.detail.length, 2);
    assert.deepEqual(Object.keys(many.error.detail[0]), ['code', 'field_name', 'message']);
  });
});

describe('configuration', () => {
  it('has documented defaults', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.anvilPort, 8545);
    assert.equal(c.chains[0].id, 31337);
    assert.equal(c.publicUrl, 'http://127.0.0.1:8080');
    assert.equal(c.databaseUrl, undefined);
  });
  it('is frozen once loaded, down to every chain and list: nothing changes it after loading', () => {
    const c = loadConfig({ TRUST_PROXY: 'loopback' });
    assert.ok(Object.isFrozen(c));
    assert.ok(Object.isFrozen(c.chains) && c.chains.every((x) => Object.isFrozen(x)));
    assert.ok(Object.isFrozen(c.trustProxy) && Object.isFrozen(c.database));
    assert.throws(() => {
      (c as { publicUrl: string }).publicUrl = 'http://elsewhere';
    }, TypeError);
    // A part of the service with another role gets its own frozen copy; the loaded config is untouched.
    const workers = withRole(c, { runApi: false });
    assert.ok(Object.isFrozen(workers) && workers.runApi === false && c.runApi === true);
    // What the start settles lives beside the config, frozen as well.
    const inst = installationOf(c, { operatorToken: 'generated', homeChainId: 1337 });
    assert.ok(Object.isFrozen(inst) && Object.isFrozen(inst.chains));
    assert.deepEqual([inst.operatorToken, inst.publicUrl, inst.homeChainId, defaultChain({ installation: inst }).id], ['generated', c.publicUrl, 1337, 31337]);
    assert.equal(c.operatorToken, undefined);
  });
  it('names the variable that is wrong', () => {
    assert.throws(
      () => loadConfig({ PORT: 'eighty' }),
      (e: Error) => e instanceof ConfigError && /PORT/.test(e.message),
    );
    assert.throws(() => loadConfig({ DATABASE_URL: 'mysql://x' }), /DATABASE_URL/);
    assert.throws(() => loadConfig({ MASTER_KEY: 'short' }), /MASTER_KEY/);
    assert.throws(() => loadConfig({ CHAIN_ID: '-1' }), /CHAIN_ID/);
  });
  it('rate limits: RATE_LIMIT per API key (default 6000, 0 = off), failed authentications per address, trusted proxies', () => {
    const d = loadConfig({});
    assert.equal(d.rateLimit, 6000);
    assert.equal(d.authFailureLimit, 100);
    assert.deepEqual(d.trustProxy, [], 'X-Forwarded-For is believed from nobody by default');
    assert.equal(loadConfig({ RATE_LIMIT: '0' }).rateLimit, 0);
    assert.equal(loadConfig({ RATE_LIMIT_AUTH_FAILURES: '0' }).authFailureLimit, 0);
    for (const bad of ['-1', '1.5', 'lots']) assert.throws(() => loadConfig({ RATE_LIMIT: bad }), /RATE_LIMIT/);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.1, 192.168.0.0/16,loopback,::1,fd00::/8' }).trustProxy, [
      '10.0.0.1',
      '192.168.0.0/16',
      'loopback',
      '::1',
      'fd00::/8',
    ]);
    for (const bad of ['true', '*', '10.0.0.0/33', '::/129', 'proxy.example.com', '10.0.0.1/8/1', '1'])
      assert.throws(() => loadConfig({ TRUST_PROXY: bad }), /TRUST_PROXY/, bad);
  });
  it('treats empty values as unset and strips a trailing slash of PUBLIC_URL', () => {
    assert.equal(loadConfig({ PORT: '' }).port, 8080);
    assert.equal(loadConfig({ PUBLIC_URL: 'https://mint.example.com/' }).publicUrl, 'https://mint.example.com');
  });
});

describe('log redaction', () => {
  it('drops query strings (one SDK sends api_secret in every query)', () => {
    assert.equal(redactQuery('/v1/user/1?api_key=k&api_secret=s'), '/v1/user/1?<redacted>');
    assert.equal(redactQuery('/v1/user/1'), '/v1/user/1');
  });
});

describe('CLI values', () => {
  it('integers within bounds only', () => {
    assert.equal(integer(1, 1000)('50'), 50);
    for (const bad of ['x', '0', '1001', '1.5', '-1', '', ' 5', '1e3']) assert.throws(() => integer(1, 1000)(bad), /Must be an integer from 1 to 1000/, bad);
  });
  it('yes/no switches', () => {
    for (const v of ['yes', 'true', '1', 'YES']) assert.equal(yesNo(v), true);
    for (const v of ['no', 'false', '0']) assert.equal(yesNo(v), false);
    assert.throws(() => yesNo('maybe'), /Must be yes or no/);
  });
  it('tables: a header, aligned columns, - for null, yes/no for booleans', () => {
    const t = table(
      [
        { uid: '1', ok: true, note: null },
        { uid: '22', ok: false, note: 'x' },
      ],
      [
        ['uid', 'uid'],
        ['ok', 'ok'],
        ['note', 'note'],
      ],
      '(none)',
    );
    assert.equal(t, 'UID  OK   NOTE\n1    yes  -\n22   no   x');
    assert.equal(table([], [['uid', 'uid']], '(none)'), '(none)');
  });
});

describe('readable log lines', () => {
  it('time, level, component, message and fields; the err stack on its own lines', () => {
    const line = prettyLine(
      JSON.stringify({
        level: 40,
        time: Date.UTC(2025, 0, 1, 12, 30, 5, 7),
        pid: 1,
        hostname: 'h',
        component: 'http',
        msg: 'request',
        method: 'GET',
        url: '/v1/user?<redacted>',
        note: 'two words',
      }),
    );
    assert.match(line, /^\d\d:\d\d:05\.007 {2}WARN {3}http {2}request {2}method=GET url=\/v1\/user\?<redacted> note="two words"\n$/);
    assert.doesNotMatch(line, /pid|hostname/);
    const err = prettyLine(JSON.stringify({ level: 50, time: 0, msg: 'failed', err: { message: 'boom', stack: 'Error: boom\n    at x' } }));
    assert.match(err, /ERROR {2}failed {2}err=boom\n {4}Error: boom\n {8}at x\n$/);
    assert.equal(prettyLine('not json'), 'not json\n');
  });
  it('LOG_FORMAT picks json or pretty; a bad value is refused naming it', () => {
    assert.equal(loadConfig({ LOG_FORMAT: 'json' }).logFormat, 'json');
    assert.equal(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
    assert.throws(() => loadConfig({ LOG_FORMAT: 'xml' }), /LOG_FORMAT/);
  });
});

describe('bounded maps', () => {
  it('keep at most their bound, the oldest out first; setting a kept key again evicts nothing', () => {
    const m = new Map<string, number>();
    for (let i = 0; i < 5; i++) assert.equal(setBounded(m, `k${i}`, i, 3), i);
    assert.deepEqual(
      [...m],
      [
        ['k2', 2],
        ['k3', 3],
        ['k4', 4],
      ],
    );
    setBounded(m, 'k3', 33, 3);
    assert.deepEqual([...m.keys()], ['k2', 'k3', 'k4']);
    assert.equal(m.get('k3'), 33);
    m.delete('k2'); // counted as new when set again: it goes last
    setBounded(m, 'k2', 22, 3);
    assert.deepEqual([...m.keys()], ['k3', 'k4', 'k2']);
  });
});
