// A worker thread the main thread depends on, kept running: it says `{ ready: true }` once it runs; one
// that ends unexpectedly is started again after a growing pause (1 s, 2 s, 4 s … 30 s; a run of a
// minute resets it); asked to stop with `{ stop: true }`, it answers `{ stopped: true }` after its last
// messages and ends, or is terminated after a bound. What the workers' thread and the creates' thread
// share (src/boot/threads/workers-thread.ts, src/boot/threads/creates-thread.ts); their own messages go to `onMessage`.
import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';

const MAX_RESTART_PAUSE_MS = 30_000;
/** A run this long counts as healthy: the next unexpected end restarts after the shortest pause again. */
const HEALTHY_RUN_MS = 60_000;

/**
 * A thread's young generation: V8 grows it to the most it may under a burst, so this is memory held
 * through one (8 MB: 10-20 MB less peak memory with the SQLite page caches of 4 MB, measured together).
 */
export const YOUNG_GENERATION_MB = 8;

export interface SupervisedWorkerOptions {
  /** How logs and errors name it ("the workers", "the creates' thread"). */
  what: string;
  log: Logger;
  /** A new thread. */
  spawn(): Worker;
  /** Every message but `ready` and `stopped`. */
  onMessage(message: unknown): void;
  /** Each time the thread (a restarted one too) is ready. */
  onReady?(): void;
  /** After every end of the thread, expected or not, before any restart. */
  onExit?(): void;
  /** Added to the log line of an unexpected end (what goes on meanwhile). */
  meanwhile?: string;
  readyTimeoutMs: number;
  stopTimeoutMs: number;
}

export class SupervisedWorker {
  private worker: Worker | null = null;
  private ready = false;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private onStopped: (() => void) | null = null;
  /** Unexpected ends since the last healthy run. */
  restarts = 0;

  constructor(private readonly opts: SupervisedWorkerOptions) {}

  /** True while the thread runs (said `ready`, has not ended). */
  get running(): boolean {
    return this.ready && this.worker !== null;
  }

  /** Posts to the running thread; false (nothing sent) when it does not run. */
  post(message: unknown): boolean {
    if (!this.running) return false;
    this.worker!.postMessage(message);
    return true;
  }

  /** Resolves once the thread is ready; rejects if it fails or stalls before that. */
  async start(): Promise<void> {
    const { what, log } = this.opts;
    const worker = this.opts.spawn();
    this.worker = worker;
    this.ready = false;
    const startedAt = Date.now();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        void worker.terminate();
        reject(new Error(`${what} did not start within ${this.opts.readyTimeoutMs / 1000} s`));
      }, this.opts.readyTimeoutMs);
      let failure: Error | null = null;
      worker.on('message', (m: unknown) => {
        if (isFlag(m, 'ready')) {
          if (this.ready) return;
          this.ready = true;
          clearTimeout(timer);
          this.opts.onReady?.();
          return resolve();
        }
        if (isFlag(m, 'stopped')) return this.onStopped?.();
        this.opts.onMessage(m);
      });
      worker.on('error', (err) => {
        failure = err;
        log.error({ err }, `${what} failed`);
      });
      worker.once('exit', (code) => {
        clearTimeout(timer);
        const wasReady = this.ready;
        this.ready = false;
        this.opts.onExit?.();
        if (!wasReady) return reject(new Error(`${what} failed to start: ${failure?.message ?? `exit code ${code}`}`));
        if (this.stopping || this.worker !== worker) return;
        if (Date.now() - startedAt > HEALTHY_RUN_MS) this.restarts = 0;
        this.restartLater(code);
      });
    });
  }

  /** Ends the thread at once, as a crash would; it is restarted as after one. */
  async terminate(): Promise<void> {
    await this.worker?.terminate();
  }

  /** Asks the thread to stop and waits for it to end; terminated after `stopTimeoutMs`. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise<void>((r) => worker.once('exit', () => r()));
    if (!this.ready) {
      await worker.terminate();
      return;
    }
    // `stopped` comes after the thread's last messages on the same port: they have all been handled then.
    const stopped = new Promise<void>((r) => (this.onStopped = r));
    worker.postMessage({ stop: true });
    const timer = setTimeout(() => {
      this.opts.log.error(`${this.opts.what} did not stop within ${this.opts.stopTimeoutMs / 1000} s; terminating it`);
      void worker.terminate();
    }, this.opts.stopTimeoutMs);
    await Promise.race([stopped, exited]);
    await exited;
    clearTimeout(timer);
  }

  private restartLater(code: number): void {
    const pause = Math.min(1000 * 2 ** this.restarts, MAX_RESTART_PAUSE_MS);
    this.restarts++;
    const meanwhile = this.opts.meanwhile ? `; ${this.opts.meanwhile}` : '';
    this.opts.log.error({ code, restartInMs: pause, restarts: this.restarts }, `${this.opts.what} stopped unexpectedly; restarting it${meanwhile}`);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopping) return;
      this.start().catch((err) => {
        this.opts.log.error({ err: (err as Error).message }, `${this.opts.what} failed to restart`);
        if (!this.stopping) this.restartLater(1);
      });
    }, pause);
  }
}

function isFlag(m: unknown, flag: 'ready' | 'stopped'): boolean {
  return typeof m === 'object' && m !== null && flag in m;
}
