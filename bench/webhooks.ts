// Webhook delivery throughput against a local receiver, next to raw HTTP POSTs to the same receiver in
// the same run. One JSON line per database.
//   node --import tsx bench/webhooks.ts      (BENCH_DB=sqlite|postgres for one; BENCH_EVENTS=2000)
//
// What is measured: events queued (in the database, as emitEvent writes them) -> signed, POSTed, 2xx
// received and the delivery recorded (attempt log + state) by the real dispatcher with the real
// SSRF-guarded sender (OUTBOUND_ALLOW_PRIVATE=true so 127.0.0.1 is allowed), 32 requests in flight at
// most, 4 per App's endpoint:
//   - the events of 1 App, and of 8 Apps;
//   - isolation: 7 Apps' events alone, then the same with an 8th App whose endpoint hangs, and with an
//     8th whose endpoint answers 500 — the 7 should keep their throughput (≥ 90 %).
// Baselines: the same number of POSTs of a similar body, 32 at a time, with nothing else — a new
// connection each (raw_post_eps, what a sender without connection reuse gets), and over kept-alive
// connections (raw_keepalive_eps, the ceiling of the receiver and the HTTP stack).
import http from 'node:http';
import os from 'node:os';
import { appsWithWebhooks, deliverAll, LoadReceiver, queueEvents, SAMPLE_BODY, webhookContext } from '../test/helpers/webhook-load.js';
import { dbsFromArgs, emit } from './lib.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);
const CONCURRENCY = 32;
const PER_ENDPOINT = 4;

async function rawPosts(url: string, n: number, agent: http.Agent | false): Promise<number> {
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end(SAMPLE_BODY);
    });
  const t = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        next++;
        await post();
      }
    }),
  );
  return n / ((performance.now() - t) / 1000);
}

const round = (x: number) => Math.round(x * 10) / 10;
const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;

for (const db of dbsFromArgs()) {
  const receiver = await new LoadReceiver().start();
  const { ctx, dispose } = await webhookContext(db);
  try {
    const opts = { concurrency: CONCURRENCY, perEndpoint: PER_ENDPOINT };
    await rawPosts(receiver.url('warmup'), Math.min(200, EVENTS), false);
    const raw = await rawPosts(receiver.url('raw'), EVENTS, false);
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const rawKeepAlive = await rawPosts(receiver.url('raw'), EVENTS, keepAlive);
    keepAlive.destroy();

    const run = async (fast: number, slow?: 'hang' | 'fail') => {
      const apps = await appsWithWebhooks(ctx, receiver, fast + (slow ? 1 : 0));
      const fastApps = apps.slice(0, fast);
      if (slow) receiver.behaviour.set(apps[fast], slow);
      const perApp = Math.ceil(EVENTS / (slow ? fast + 1 : fast));
      await queueEvents(ctx, apps, perApp);
      const eps = await deliverAll(ctx, receiver, fastApps, perApp, opts);
      // The slow App's leftovers must not weigh on the next run.
      if (slow)
        await ctx.db
          .updateTable('webhook_deliveries')
          .set({ status: 'disabled', next_attempt_at: null })
          .where('app_uid', '=', apps[fast])
          .where('status', '=', 'pending')
          .execute();
      return eps;
    };
    const oneApp = await run(1);
    const eightApps = await run(8);
    const sevenAlone = await run(7);
    const sevenBesideHanging = await run(7, 'hang');
    const sevenBesideFailing = await run(7, 'fail');
    const attempts = await ctx.db
      .selectFrom('webhook_attempts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    emit({
      bench: 'webhooks',
      db,
      events: EVENTS,
      concurrency: CONCURRENCY,
      per_endpoint: PER_ENDPOINT,
      baseline_raw_post_eps: round(raw),
      baseline_raw_keepalive_eps: round(rawKeepAlive),
      dispatcher_one_app_eps: round(oneApp),
      dispatcher_8_apps_eps: round(eightApps),
      ratio_8_apps_to_baseline: ratio(eightApps, raw),
      ratio_8_apps_to_keepalive_baseline: ratio(eightApps, rawKeepAlive),
      isolation: {
        seven_apps_eps: round(sevenAlone),
        beside_hanging_endpoint_eps: round(sevenBesideHanging),
        beside_failing_endpoint_eps: round(sevenBesideFailing),
        kept_beside_hanging: ratio(sevenBesideHanging, sevenAlone),
        kept_beside_failing: ratio(sevenBesideFailing, sevenAlone),
      },
      attempts_logged: Number(attempts.n),
      node: process.version,
      cpus: os.cpus().length,
    });
  } finally {
    await receiver.stop();
    await dispose();
  }
}
