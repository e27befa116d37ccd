// The workers of `npm start` run in a worker thread of their own. With the API and the workers both on
// (the default), the API keeps the main thread and the workers (job handlers, chain sender and tracker,
// indexer, webhook dispatcher) run beside it, so signing, receipts and log decoding never take CPU from
// the event loop that answers requests. The thread has its own database connection (on SQLite the WAL
// lets the API read while the workers write; writers wait for each other asynchronously) and uses the
// main thread's embedded chain.
//
// The thread runs at a lower CPU priority (WORKER_NICE, default 10; Linux keeps a nice value per
// thread): when the machine is saturated, as during a burst, answering requests comes first and
// minting catches up as soon as CPU frees.
//
// Wake-ups cross over: a job enqueued by the API is announced to the thread at once, as an inline worker
// would have been woken, instead of waiting for its next poll. A thread that dies is restarted with a
// growing pause; every job is safe to resume after a crash. The thread ends with the process.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import { rowVersions } from '../../store/row-versions.js';
import { writeTurns } from '../../store/write-turns.js';
import { SupervisedWorker, YOUNG_GENERATION_MB } from './supervised-worker.js';
import type { ProviderSnapshot } from '../../chain/providers.js';
import type { ThreadMemory } from '../../util/thread-memory.js';
import { threadStart } from '../../util/build-paths.js';

const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 20_000;

/** Messages between the main thread and the workers' thread. */
export type ToWorkers = { wake: string[] } | { stop: true };
export type FromWorkers = { ready: true } | { stopped: true } | { providers: ProviderSnapshot[]; memory: ThreadMemory };

/** How often the workers' thread tells the API's how the chains' providers fare and its heap (for /health and /metrics). */
export const PROVIDER_REPORT_MS = 2000;
export interface WorkersThreadData {
  config: Config;
  /** The JSON-RPC URL of the embedded chain the main thread runs (none with external chains only). */
  embeddedRpcUrl?: string;
  /** The process's row counters (src/store/row-versions.ts): the workers' commits move the API's cached reads. */
  rowVersions: SharedArrayBuffer;
  /** Turns at SQLite's write lock (src/store/write-turns.ts): the API's thread goes first. */
  writeTurns: SharedArrayBuffer;
}

export interface WorkersStatus {
  thread: boolean;
  running: boolean;
  restarts: number;
}

export class WorkersThread {
  private readonly thread: SupervisedWorker;
  private pendingWakes = new Set<string>();
  private providerReport: ProviderSnapshot[] = [];
  private memoryReport: ThreadMemory | null = null;

  /** `config` is the workers' own (API off); `embeddedRpcUrl` the main thread's embedded chain, when it runs one. */
  constructor(private readonly opts: { config: Config; embeddedRpcUrl?: string; log: Logger }) {
    this.thread = new SupervisedWorker({
      what: 'the workers',
      log: opts.log,
      readyTimeoutMs: READY_TIMEOUT_MS,
      stopTimeoutMs: STOP_TIMEOUT_MS,
      spawn: () => {
        const data: WorkersThreadData = {
          config: this.opts.config,
          embeddedRpcUrl: this.opts.embeddedRpcUrl,
          rowVersions: rowVersions().buffer,
          writeTurns: writeTurns().buffer,
        };
        // The young generation bounded (V8 would grow it to 48 MB): the workers make short-lived garbage in
        // bursts (a mint batch's calldata, receipts and rows); see YOUNG_GENERATION_MB.
        const [entry, how] = threadStart('main-workers-thread');
        return new Worker(entry, { ...how, workerData: data, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
      },
      onMessage: (m) => {
        if (!m || typeof m !== 'object' || !('providers' in m)) return;
        const report = m as Extract<FromWorkers, { providers: ProviderSnapshot[] }>;
        this.providerReport = report.providers;
        this.memoryReport = report.memory;
      },
      onReady: () => this.flushWakes(), // the wake-ups that came while it was down
    });
  }

  /** Resolves once the workers run; rejects if the thread fails or stalls before that. */
  async start(): Promise<void> {
    await this.thread.start();
  }

  /** A job of `kind` was enqueued here: wake the workers' loop for it (coalesced per tick). */
  wake(kind: string): void {
    if (this.pendingWakes.size === 0) setImmediate(() => this.flushWakes());
    this.pendingWakes.add(kind);
  }

  /** The chains' providers as the workers' thread last reported them. */
  providers(): ProviderSnapshot[] {
    return this.providerReport;
  }

  /** The thread's heap as it last reported it (null before its first report). */
  memory(): ThreadMemory | null {
    return this.thread.running ? this.memoryReport : null;
  }

  status(): WorkersStatus {
    return { thread: true, running: this.thread.running, restarts: this.thread.restarts };
  }

  /** The workers stop claiming, finish what they hold and stop; terminated after 20 s. */
  async stop(): Promise<void> {
    await this.thread.stop();
  }

  private flushWakes(): void {
    if (!this.pendingWakes.size) return;
    if (this.thread.post({ wake: [...this.pendingWakes] } satisfies ToWorkers)) this.pendingWakes.clear();
  }
}
