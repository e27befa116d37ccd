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
import type { Config } from './config.js';
import { rowVersions } from './store/row-versions.js';
import { writeTurns } from './store/write-turns.js';

const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 20_000;
const MAX_RESTART_PAUSE_MS = 30_000;

/** Messages between the main thread and the workers' thread. */
export type ToWorkers = { wake: string[] } | { stop: true };
export type FromWorkers = { ready: true } | { stopped: true };
export interface WorkersThreadData {
  config: Config;
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
  private worker: Worker | null = null;
  private ready = false;
  private stopping = false;
  private restarts = 0;
  private pendingWakes = new Set<string>();
  private restartTimer: NodeJS.Timeout | null = null;

  /** `config` is the workers' own: API off, and the chain's URL when it is the embedded one. */
  constructor(private readonly opts: { config: Config; log: Logger }) {}

  /** Resolves once the workers run; rejects if the thread fails or stalls before that. */
  async start(): Promise<void> {
    const data: WorkersThreadData = { config: this.opts.config, rowVersions: rowVersions().buffer, writeTurns: writeTurns().buffer };
    // The young generation bounded (V8 would grow it to 48 MB): the workers make short-lived garbage in
    // bursts (a mint batch's calldata, receipts and rows). 16 MB is the measured balance between memory
    // and speed: at 8 MB the scavenges of a mint burst took ~12 % of the thread.
    const worker = new Worker(new URL('./workers-main.js', import.meta.url), { workerData: data, resourceLimits: { maxYoungGenerationSizeMb: 16 } });
    this.worker = worker;
    this.ready = false;
    const startedAt = Date.now();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        void worker.terminate();
        reject(new Error(`the workers did not start within ${READY_TIMEOUT_MS / 1000} s`));
      }, READY_TIMEOUT_MS);
      let failure: Error | null = null;
      worker.on('message', (m: FromWorkers) => {
        if ('ready' in m && !this.ready) {
          this.ready = true;
          clearTimeout(timer);
          resolve();
        }
      });
      worker.on('error', (err) => {
        failure = err;
        this.opts.log.error({ err }, 'the workers thread failed');
      });
      worker.once('exit', (code) => {
        clearTimeout(timer);
        if (!this.ready) return reject(new Error(`the workers failed to start: ${failure?.message ?? `exit code ${code}`}`));
        if (Date.now() - startedAt > 60_000) this.restarts = 0; // a long healthy run resets the pause
        this.onUnexpectedExit(worker, code);
      });
    });
    this.flushWakes();
  }

  /** A job of `kind` was enqueued here: wake the workers' loop for it (coalesced per tick). */
  wake(kind: string): void {
    if (this.pendingWakes.size === 0) setImmediate(() => this.flushWakes());
    this.pendingWakes.add(kind);
  }

  status(): WorkersStatus {
    return { thread: true, running: this.ready, restarts: this.restarts };
  }

  /** The workers stop claiming, finish what they hold and stop; terminated after 20 s. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (!worker || !this.ready) return void (await worker?.terminate());
    const exited = new Promise<void>((r) => worker.once('exit', () => r()));
    worker.postMessage({ stop: true } satisfies ToWorkers);
    const timer = setTimeout(() => {
      this.opts.log.error(`the workers did not stop within ${STOP_TIMEOUT_MS / 1000} s; terminating them`);
      void worker.terminate();
    }, STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
    this.ready = false;
  }

  private flushWakes(): void {
    if (!this.pendingWakes.size || !this.worker || !this.ready) return;
    this.worker.postMessage({ wake: [...this.pendingWakes] } satisfies ToWorkers);
    this.pendingWakes.clear();
  }

  private onUnexpectedExit(worker: Worker, code: number): void {
    if (this.stopping || worker !== this.worker) return;
    this.ready = false;
    const pause = Math.min(1000 * 2 ** this.restarts, MAX_RESTART_PAUSE_MS);
    this.restarts++;
    this.opts.log.error({ code, restartInMs: pause, restarts: this.restarts }, 'the workers stopped unexpectedly; restarting them');
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopping) return;
      this.start().catch((err) => {
        this.opts.log.error({ err: (err as Error).message }, 'the workers failed to restart');
        this.onUnexpectedExit(this.worker!, 1);
      });
    }, pause);
  }
}
