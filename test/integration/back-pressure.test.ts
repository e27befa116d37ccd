// Back-pressure of creates and what /metrics says of memory: a create refused for memory answers 503
// `overloaded` in the error envelope with Retry-After and writes nothing; /metrics carries each thread's
// heap (the creates' thread's in-process; the workers' thread's too as `npm start` runs it), the
// creates held and where the creates' thread's creates waited.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { startTestService, type TestService } from '../helpers/service.js';
import { freePort, tempDir, waitFor } from '../helpers/env.js';
import { startService, stopAll } from '../helpers/process-group.js';

const gauge = (metrics: string, name: string, labels: string) => {
  const m = new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(metrics);
  return m ? Number(m[1]) : null;
};

describe('creates over MEMORY_LIMIT_MB', () => {
  let t: TestService;
  // 1 MB: any process is over it, so every create is refused.
  before(async () => (t = await startTestService('sqlite', { MEMORY_LIMIT_MB: '1' })));
  after(() => t?.stop());

  it('answer 503 overloaded with Retry-After and write nothing; /metrics counts them and shows the heaps', async () => {
    const app = await t.newApp();
    const collection = await t.newCollection(app.uid);
    const user = (await app.api.post('/user', {})).body.data.uid as string;
    const data = { name: 'Sword', description: 'd', unique_name: false, image_url: 'https://example.com/s.png', store_image_on_ipfs: false };
    const one = await app.api.post('/asset', { user_uid: user, collection_uid: collection, asset_external_id: 'e1', data });
    assert.equal(one.status, 503);
    assert.equal(one.headers.get('retry-after'), '5');
    assert.equal(one.body.success, false);
    assert.equal(one.body.error.type, 'server_error');
    assert.equal(one.body.error.detail.code, 'overloaded');
    assert.match(one.body.error.detail.message, /MEMORY_LIMIT_MB/);
    const batch = await app.api.post('/asset/batch', { assets: [{ user_uid: user, collection_uid: collection, asset_external_id: 'e2', data }] });
    assert.equal(batch.status, 503);
    assert.equal(batch.body.error.detail.code, 'overloaded');
    // Reads and other writes are not refused.
    assert.equal((await app.api.get(`/user/${user}`)).status, 200);
    const assets = await t.svc.ctx.db.selectFrom('assets').select('uid').where('collection_uid', '=', collection).execute();
    assert.deepEqual(assets, [], 'nothing was written');

    // The creates' thread reports its heap every 2 s.
    const metrics = await waitFor('the creates thread heap in /metrics', async () => {
      const text = await (await fetch(`${t.svc.url}/metrics`)).text();
      return gauge(text, 'mintworks_thread_heap_bytes', 'thread="creates",space="used"') ? text : null;
    });
    assert.equal(gauge(metrics, 'mintworks_creates_refused_total', 'reason="memory"'), 2);
    assert.equal(gauge(metrics, 'mintworks_creates_refused_total', 'reason="queue"'), 0);
    assert.equal(gauge(metrics, 'mintworks_creates_held', 'unit="requests"'), 0, 'a refused create holds nothing');
    assert.equal(gauge(metrics, 'mintworks_creates_held', 'unit="bytes"'), 0);
    assert.match(metrics, /^mintworks_creates_thread_in_flight 0$/m);
    for (const thread of ['api', 'creates'])
      for (const space of ['used', 'total', 'external'])
        assert.ok(gauge(metrics, 'mintworks_thread_heap_bytes', `thread="${thread}",space="${space}"`)! > 0, `${thread} ${space}`);
    assert.ok(
      gauge(metrics, 'mintworks_thread_heap_bytes', 'thread="api",space="used"')! <=
        gauge(metrics, 'mintworks_thread_heap_bytes', 'thread="api",space="total"')!,
    );
  });
});

describe('where creates wait, in /metrics', () => {
  let t: TestService;
  before(async () => (t = await startTestService('sqlite')));
  after(() => t?.stop());

  it("sums the time creates spent being written by the creates' thread and flushed to disk", async () => {
    const app = await t.newApp();
    const collection = await t.newCollection(app.uid);
    const user = (await app.api.post('/user', {})).body.data.uid as string;
    const data = { name: 'Sword', description: 'd', unique_name: false, image_url: 'https://example.com/s.png', store_image_on_ipfs: false };
    const before = await (await fetch(`${t.svc.url}/metrics`)).text();
    const counted = (text: string, stage: string) => gauge(text, 'mintworks_creates_wait_seconds_count', `stage="${stage}"`);
    const created = await Promise.all(
      Array.from({ length: 6 }, (_, i) => app.api.post('/asset', { user_uid: user, collection_uid: collection, asset_external_id: `w${i}`, data })),
    );
    assert.deepEqual(
      created.map((r) => r.status),
      Array(6).fill(201),
    );
    const metrics = await (await fetch(`${t.svc.url}/metrics`)).text();
    for (const stage of ['written', 'flushed']) assert.equal(counted(metrics, stage)! - counted(before, stage)!, 6, `${stage}: each create once`);
    assert.match(metrics, /^# TYPE mintworks_creates_wait_seconds_sum counter$/m);
    // Written: at least a commit of SQLite; flushed: at least an fdatasync of the WAL.
    assert.ok(gauge(metrics, 'mintworks_creates_wait_seconds_sum', 'stage="written"')! > 0);
    assert.ok(gauge(metrics, 'mintworks_creates_wait_seconds_sum', 'stage="flushed"')! > 0);
  });
});

describe('/metrics of npm start (dist/main.js)', () => {
  let child: ChildProcess;
  let url: string;
  before(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    child = startService({ PORT: String(port), ANVIL_PORT: String(await freePort()), DATA_DIR: tempDir(), LOG_LEVEL: 'warn', DEMO_APP: 'false' });
    await waitFor('service health', async () => (await fetch(`${url}/health`).catch(() => null))?.status === 200, 120_000, 200);
  });
  after(() => stopAll([child]));

  it("shows the heap of the API's, the creates' and the workers' threads", async () => {
    const metrics = await waitFor('every thread reported', async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return ['api', 'creates', 'workers'].every((th) => gauge(text, 'mintworks_thread_heap_bytes', `thread="${th}",space="used"`)) ? text : null;
    });
    assert.match(metrics, /^mintworks_creates_thread_in_flight 0$/m);
    assert.match(metrics, /^# TYPE mintworks_jobs gauge$/m, 'the durable queue, by kind and status');
  });
});
