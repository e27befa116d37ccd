// GET /health's answer: whether this service is ready, and the state of what it is made of (chains,
// relayers, store, workers, threads, queue).
import type { ChainRuntime } from '../chain/runtime.js';
import type { JobQueue } from '../jobs/queue.js';
import { ping, type Store } from '../store/db.js';
import type { CreatesThread } from './threads/creates-thread.js';

export interface HealthSources {
  /** Every chain served, the default one first. */
  runtimes: ChainRuntime[];
  /** The embedded chain is being restarted after it died. */
  chainRestarting(): boolean;
  /** Start-up is over: the Demo App (and its demo.env) is written after the port is bound. */
  startedUp(): boolean;
  store: Store;
  queue: JobQueue;
  /** The workers run in this process (inline, or in the thread of `npm start`). */
  workers: boolean;
  /** What the workers' thread reports, when they run in one. */
  workerThread?: () => unknown;
  creates: CreatesThread | null;
  /** When the service started (ms since the epoch). */
  started: number;
}

export async function healthReport(s: HealthSources) {
  const primary = s.runtimes[0];
  const [chains] = await Promise.all([Promise.all(s.runtimes.map((rt) => rt.health(rt.spec.embedded && s.chainRestarting()))), ping(s.store.db)]);
  // Read once the chains have answered: the state they answered in, not the one when the request came.
  const chainRestarting = s.chainRestarting();
  const startedUp = s.startedUp();
  const first = chains[0];
  const relayers = first.accounts.filter((a) => a.role === 'relayer').map((a) => ({ address: a.address, balance_wei: a.balance_wei ?? '-1', low: a.low }));
  const low = relayers.filter((r) => r.low);
  return {
    // The default chain answering is what makes the service ready; every chain says its own state.
    // Not ready while the default chain cannot take work (unreachable, an account to fund, the forwarder
    // being deployed): its status says which.
    ready: startedUp && first.ready && !chainRestarting,
    status: !startedUp ? 'starting' : chainRestarting ? 'chain restarting' : !first.ready ? first.status : low.length ? 'relayer balance low' : 'ok',
    relayers,
    store: s.store.dialect,
    // PostgreSQL: this process's pool (its main thread's): connections open and idle, queries waiting for one now, and every wait so far.
    ...(s.store.poolStats ? { database_pool: s.store.poolStats() } : {}),
    chain: { chain_id: first.chain_id, name: first.name, block: first.block, embedded: first.embedded },
    chains,
    workers: s.workers,
    ...(s.workerThread ? { worker_thread: s.workerThread() } : {}),
    ...(s.creates ? { creates_thread: s.creates.status() } : {}),
    jobs: await s.queue.counts(),
    unconfirmed_transactions: await primary.sender.pendingCount(),
    uptime_s: Math.round((Date.now() - s.started) / 1000),
  };
}
