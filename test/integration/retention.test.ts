// Retention with an injected clock, on both databases: after RETENTION_DAYS what only records the past
// goes; whatever an open operation still needs stays, however old.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pruneOnce } from '../../src/services/retention.js';
import { webhookContext } from '../helpers/webhook-load.js';
import type { Ctx } from '../../src/services/context.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2030, 0, 31);
const OLD = NOW - 40 * DAY; // beyond 30 days
const RECENT = NOW - 2 * DAY;

for (const db of ['sqlite', 'postgres'] as const) {
  describe(`retention (${db})`, () => {
    let env: Awaited<ReturnType<typeof webhookContext>>;
    let ctx: Ctx;
    before(async () => {
      env = await webhookContext(db);
      ctx = env.ctx;
    });
    after(() => env.dispose());

    /** `n` attempts of an App older than the retention, in inserts of 500 rows. */
    const insertOldAttempts = async (prefix: string, appUid: string, n: number) => {
      const rows = Array.from({ length: n }, (_, i) => ({
        event_id: `${prefix}${i}`,
        app_uid: appUid,
        attempt: 1,
        attempted_at: OLD,
        url: 'https://x',
        status_code: 200,
        latency_ms: 1,
        error: null,
        response_body: null,
      }));
      for (let i = 0; i < rows.length; i += 500)
        await ctx.db
          .insertInto('webhook_attempts')
          .values(rows.slice(i, i + 500))
          .execute();
    };

    const event = async (id: string, at: number, delivery?: { status: 'pending' | 'delivered' | 'expired' | 'disabled'; deadline: number }) => {
      await ctx.db
        .insertInto('events')
        .values({ id, app_uid: '100000000001', type: 'asset.minted', payload: '{}', event_time: new Date(at).toISOString(), created_at_ms: at })
        .execute();
      if (delivery) {
        await ctx.db
          .insertInto('webhook_deliveries')
          .values({
            event_id: id,
            app_uid: '100000000001',
            event_type: 'asset.minted',
            status: delivery.status,
            attempts: 1,
            event_time_ms: at,
            deadline_at: delivery.deadline,
            next_attempt_at: delivery.status === 'pending' ? NOW : null,
            last_attempt_at: at,
            last_status_code: null,
            last_error: null,
            delivered_at: null,
            recent_attempts: '[]',
            lease_until: null,
            locked_by: null,
            created_at_ms: at,
            updated_at_ms: at,
          })
          .execute();
      }
    };
    const job = (status: 'queued' | 'running' | 'done' | 'failed', at: number) =>
      ctx.db
        .insertInto('jobs')
        .values({
          kind: 'asset.mint',
          ref: `r${Math.random()}`,
          group_key: null,
          payload: '{}',
          status,
          run_at: at,
          attempts: 1,
          max_attempts: 5,
          lease_until: null,
          locked_by: null,
          last_error: null,
          created_at: at,
          updated_at: at,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
    const tx = (nonce: number, status: 'sent' | 'mined', handled: number, at: number) =>
      ctx.db
        .insertInto('chain_txs')
        .values({
          chain_id: 31337,
          from_address: '0xabc',
          nonce,
          kind: 'asset.mint',
          ref: 'x',
          payload: '{}',
          raw: '0xdeadbeef',
          hash: `0x${nonce}`,
          status,
          handled,
          created_at: at,
          updated_at: at,
        })
        .returning('id')
        .executeTakeFirstOrThrow();

    it('prunes old events, finished deliveries, attempts, finished jobs and settled raw bytes; keeps the rest', async () => {
      await event('old-no-webhook', OLD);
      await event('old-delivered', OLD, { status: 'delivered', deadline: OLD + 3 * DAY });
      await event('old-expired', OLD, { status: 'expired', deadline: OLD + 3 * DAY });
      await event('old-disabled-past-deadline', OLD, { status: 'disabled', deadline: OLD + 3 * DAY });
      await event('old-disabled-open', OLD, { status: 'disabled', deadline: NOW + DAY }); // redelivered: may resume
      await event('old-pending', OLD, { status: 'pending', deadline: NOW + DAY });
      await event('recent-delivered', RECENT, { status: 'delivered', deadline: RECENT + 3 * DAY });
      for (const [i, at] of [OLD, OLD, RECENT].entries()) {
        await ctx.db
          .insertInto('webhook_attempts')
          .values({
            event_id: `a${i}`,
            app_uid: '100000000001',
            attempt: 1,
            attempted_at: at,
            url: 'https://x',
            status_code: 200,
            latency_ms: 1,
            error: null,
            response_body: 'ok',
          })
          .execute();
      }
      const jobs = {
        oldDone: await job('done', OLD),
        oldFailed: await job('failed', OLD),
        oldQueued: await job('queued', OLD),
        recentDone: await job('done', RECENT),
      };
      const txs = {
        oldMined: await tx(1, 'mined', 1, OLD),
        oldUnhandled: await tx(2, 'mined', 0, OLD),
        oldSent: await tx(3, 'sent', 0, OLD),
        recentMined: await tx(4, 'mined', 1, RECENT),
      };

      const pruned = await pruneOnce(ctx, 30, NOW);
      assert.deepEqual(pruned, { events: 4, webhook_deliveries: 3, webhook_attempts: 2, jobs: 2, chain_tx_raw: 1 });

      const events = (await ctx.db.selectFrom('events').select('id').orderBy('id').execute()).map((r) => r.id);
      assert.deepEqual(events, ['old-disabled-open', 'old-pending', 'recent-delivered']);
      const deliveries = (await ctx.db.selectFrom('webhook_deliveries').select('event_id').orderBy('event_id').execute()).map((r) => r.event_id);
      assert.deepEqual(deliveries, ['old-disabled-open', 'old-pending', 'recent-delivered']);
      assert.deepEqual(
        (await ctx.db.selectFrom('webhook_attempts').select('event_id').execute()).map((r) => r.event_id),
        ['a2'],
      );
      const jobIds = (await ctx.db.selectFrom('jobs').select('id').execute()).map((r) => r.id).sort((a, b) => a - b);
      assert.deepEqual(jobIds, [jobs.oldQueued.id, jobs.recentDone.id]);
      const raws = Object.fromEntries((await ctx.db.selectFrom('chain_txs').select(['id', 'raw']).execute()).map((r) => [r.id, r.raw]));
      assert.deepEqual(raws, {
        [txs.oldMined.id]: '',
        [txs.oldUnhandled.id]: '0xdeadbeef',
        [txs.oldSent.id]: '0xdeadbeef',
        [txs.recentMined.id]: '0xdeadbeef',
      });

      assert.deepEqual(
        await pruneOnce(ctx, 30, NOW),
        { events: 0, webhook_deliveries: 0, webhook_attempts: 0, jobs: 0, chain_tx_raw: 0 },
        'nothing more the second time',
      );
      const later = await pruneOnce(ctx, 30, NOW + 30 * DAY);
      assert.equal(later.events, 2, 'the recent event goes once it is old too, and the disabled one once past its deadline');
      assert.deepEqual(
        (await ctx.db.selectFrom('events').select('id').execute()).map((r) => r.id),
        ['old-pending'],
        'an open delivery keeps its event',
      );
      assert.equal(later.jobs, 1);
    });

    it('is not stopped by a young row before older ones (ids and clocks of several processes)', async () => {
      const young = NOW + 59 * DAY;
      await ctx.db
        .insertInto('webhook_attempts')
        .values({
          event_id: 'young',
          app_uid: '100000000003',
          attempt: 1,
          attempted_at: young,
          url: 'https://x',
          status_code: 200,
          latency_ms: 1,
          error: null,
          response_body: null,
        })
        .execute();
      await insertOldAttempts('late', '100000000003', 2500);
      const pruned = await pruneOnce(ctx, 30, NOW + 60 * DAY);
      assert.ok(pruned.webhook_attempts >= 2500, `${pruned.webhook_attempts} pruned`);
      assert.deepEqual(
        (await ctx.db.selectFrom('webhook_attempts').select('event_id').where('app_uid', '=', '100000000003').execute()).map((r) => r.event_id),
        ['young'],
      );
    });

    it('walks large tables in chunks', async () => {
      await insertOldAttempts('bulk', '100000000002', 4500);
      const pruned = await pruneOnce(ctx, 30, NOW + 30 * DAY);
      assert.equal(pruned.webhook_attempts, 4500);
      assert.equal(
        Number(
          (
            await ctx.db
              .selectFrom('webhook_attempts')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('app_uid', '=', '100000000002')
              .executeTakeFirstOrThrow()
          ).n,
        ),
        0,
      );
    });
  });
}
