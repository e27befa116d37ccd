// Isolation under load, with the real dispatcher, HTTP sender and database: seven Apps with fast
// endpoints keep at least 90 % of their delivery throughput when an eighth App's endpoint hangs or
// answers 500 to everything. Throughput is timing, and CI machines are shared: each shape is measured
// in five interleaved rounds and its best run counts (the claim is about capacity, not about a noisy
// neighbour).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appsWithWebhooks, deliverAll, LoadReceiver, queueEvents, webhookContext } from '../helpers/webhook-load.js';

const FAST_APPS = 7;
const PER_APP = 150;

for (const db of ['sqlite', 'postgres'] as const) {
  describe(`webhook isolation under load (${db})`, () => {
    let receiver: LoadReceiver;
    let env: Awaited<ReturnType<typeof webhookContext>>;
    before(async () => {
      receiver = await new LoadReceiver().start();
      env = await webhookContext(db);
    });
    after(async () => {
      await receiver.stop();
      await env.dispose();
    });

    /** Deliveries per second of FAST_APPS new Apps, beside a new App answering as `slow` (if any). */
    async function measure(slow?: 'hang' | 'fail'): Promise<number> {
      const apps = await appsWithWebhooks(env.ctx, receiver, FAST_APPS + (slow ? 1 : 0));
      if (slow) receiver.behaviour.set(apps[FAST_APPS], slow);
      await queueEvents(env.ctx, apps, PER_APP);
      const eps = await deliverAll(env.ctx, receiver, apps.slice(0, FAST_APPS), PER_APP, { concurrency: 32, perEndpoint: 4, timeoutMs: 30_000 });
      if (slow) {
        // While the fast Apps were served, the slow one really was slow: nothing of it delivered.
        assert.equal(receiver.count(apps[FAST_APPS]), 0);
        await env.ctx.db.updateTable('webhook_deliveries').set({ status: 'disabled', next_attempt_at: null }).where('app_uid', '=', apps[FAST_APPS]).where('status', '=', 'pending').execute();
      }
      return eps;
    }

    it('seven fast Apps keep ≥ 90 % of their throughput beside a hanging endpoint and beside a failing one', async () => {
      // Interleaved rounds, so that a slow phase of the machine weighs on every shape alike.
      let [alone, besideHanging, besideFailing] = [0, 0, 0];
      for (let round = 0; round < 5; round++) {
        alone = Math.max(alone, await measure());
        besideHanging = Math.max(besideHanging, await measure('hang'));
        besideFailing = Math.max(besideFailing, await measure('fail'));
      }
      process.stdout.write(`# ${db}: 7 Apps alone ${Math.round(alone)}/s, beside a hanging endpoint ${Math.round(besideHanging)}/s, beside a failing one ${Math.round(besideFailing)}/s\n`);
      assert.ok(besideHanging >= 0.9 * alone, `beside a hanging endpoint: ${Math.round(besideHanging)}/s < 90 % of ${Math.round(alone)}/s`);
      assert.ok(besideFailing >= 0.9 * alone, `beside a failing endpoint: ${Math.round(besideFailing)}/s < 90 % of ${Math.round(alone)}/s`);
    });
  });
}
