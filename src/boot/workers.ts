// The workers of a process that runs them (WORKERS): the job handlers that have no chain of their own
// (the chains' own run in their chain work), webhook deliveries, PostgreSQL wake-ups and retention.
import os from 'node:os';
import type { Booting } from './open-core.js';
import type { Ctx } from '../services/context.js';
import { WorkerPool } from '../jobs/worker.js';
import { CHAIN_JOB_KINDS, kindOn } from '../jobs/kinds.js';
import { isChainUnreachable } from '../chain/unreachable.js';
import { walletJobHandler } from '../services/users/wallets.js';
import { prepareJobHandler } from '../services/assets/prepare-job.js';
import { itemPrepareJobHandler } from '../services/items/prepare-job.js';
import { publishJobHandler } from '../metadata/publish.js';
import { Pruner } from '../services/retention.js';
import { webhookDispatcher } from '../webhooks/index.js';
import { DivergenceWatch } from '../services/verify/watch.js';

export async function startWorkers(ctx: Ctx, { config, log, core, shutdown }: Booting): Promise<void> {
  const handlers = [
    walletJobHandler(ctx),
    prepareJobHandler(ctx), // images and metadata documents before the mint (src/metadata)
    itemPrepareJobHandler(ctx), // items' images and documents, IPFS for production Apps
    publishJobHandler(ctx), // optional IPFS node / pinning service
  ];
  // Where one process runs every worker (SQLite), what was running belonged to a previous run of
  // them. By kind, so that the claim index finds them.
  const kinds = [...handlers.map((h) => h.kind), ...config.chains.flatMap((c) => CHAIN_JOB_KINDS.map((k) => kindOn(ctx, k, c.id)))];
  await core.queue.releaseAbandoned(kinds);
  const workers = new WorkerPool(core.queue, log.child({ component: 'worker' }), `${os.hostname()}:${process.pid}`, isChainUnreachable);
  workers.start(handlers);
  shutdown.add(() => workers.stop());
  const webhooks = webhookDispatcher(ctx, { workerId: `${os.hostname()}:${process.pid}` });
  webhooks.start();
  shutdown.add(() => webhooks.stop());
  // PostgreSQL: work other processes insert wakes these workers at once (migration 019), not at the next
  // poll. Not behind a transaction pooler without DATABASE_DIRECT_URL (LISTEN needs a session): they poll.
  const signals = core.queue.signals;
  const wakeups = core.store.wakeups?.(log.child({ component: 'wakeups' }), (kind) =>
    kind === '*' ? signals.eventNames().forEach((k) => signals.emit(k)) : void signals.emit(kind),
  );
  if (wakeups) {
    await wakeups.start();
    shutdown.add(() => wakeups.stop());
  }
  // Each chain's records checked against the chain, a few at a time (CHAIN_VERIFY_INTERVAL_SECONDS).
  if (config.chainVerifyIntervalS > 0)
    for (const chain of ctx.chains?.values() ?? []) {
      const watch = new DivergenceWatch(chain, config.chainVerifyIntervalS * 1000, config.chainVerifyBatch);
      watch.start();
      shutdown.add(() => watch.stop());
    }
  const pruner = new Pruner(ctx, config.retentionDays, log.child({ component: 'retention' }));
  pruner.start();
  shutdown.add(() => pruner.stop());
}
