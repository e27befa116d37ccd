// POST /asset's creates are written in a thread of their own. Writing a group of creates (the checks,
// the multi-row inserts into SQLite's B-trees, the commit's WAL writes) was about three quarters of the
// API thread's CPU per create; in this thread it runs on another core while the event loop parses,
// authenticates and validates the next requests. The event loop no longer waits for SQLite's write lock
// either: this thread does, and the next group grows meanwhile.
//
// The thread runs the same AssetIntake (services/assets/create.ts) the main thread would: groups, the
// same checks in the same order, token ids fixed at create. The main thread hands it each event-loop
// turn's creates in one message; the thread sends each group's answers back in one once the group has
// committed and the thread has flushed the WAL (creates-outbox.ts), so a 201 is as durable as before.
// Its writes go first at SQLite's write lock, as the main thread's do (store/write-turns.ts).
//
// While the thread is not running (starting, or restarting after a crash), creates are written on the
// main thread as before. A crash while creates are in flight answers those with a 500: whether their
// group committed is unknown, and sending one again is safe (the same Idempotency-Key answers as the
// first time; the same asset_external_id cannot create a second asset).
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config, Installation } from '../../config/config.js';
import type { AssetParams, CreatesWriter } from '../../services/assets/create.js';
import { IdempotencyConflict, type IdempotentWrite } from '../../services/requests/idempotency.js';
import { ApiError, type ErrorDetail, type ErrorType } from '../../util/errors.js';
import { rowVersions } from '../../store/row-versions.js';
import { writeTurns } from '../../store/write-turns.js';
import { SupervisedWorker, YOUNG_GENERATION_MB } from './supervised-worker.js';
import type { AppEnvironment } from '../../domain/environment.js';
import { isDatabaseUnavailable } from '../../store/unavailable.js';
import type { ThreadMemory } from '../../util/thread-memory.js';
import { threadStart } from '../../util/build-paths.js';
import type { CreatesWaits } from '../../http/metrics.js';

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 20_000;

/** A create as it crosses to the thread. */
export interface WireCreate {
  id: number;
  appUid: string;
  environment: AppEnvironment;
  params: AssetParams;
  idem?: IdempotentWrite;
}
/**
 * An API error keeps its status and details across; anything else its class name, message and code, so
 * that the main thread tells it as the creates' own thread would: an IdempotencyConflict (another
 * process answered under the same Idempotency-Key first) becomes that answer's replay or a 422, a
 * unique violation stays one.
 */
export type WireError = { status: number; type: ErrorType; details: ErrorDetail[] } | { message: string; name?: string; code?: string };
export type WireAnswer = { id: number; uid: string } | { id: number; error: WireError };

export type ToCreates = { creates: WireCreate[] } | { stop: true };
/**
 * `announce`: the job kinds the answered groups enqueued (the main thread wakes the workers for them);
 * `flushedMs`: how long the thread's flush before sending took. `memory`: its heap, now and then.
 */
export type FromCreates = { ready: true } | { answers: WireAnswer[]; announce: string[]; flushedMs: number } | { memory: ThreadMemory } | { stopped: true };
export interface CreatesThreadData {
  config: Config;
  /** What the main thread's start agreed on (the public URL of token URIs, the home chain of job kinds). */
  installation: Installation;
  /** The process's row counters (src/store/row-versions.ts). */
  rowVersions: SharedArrayBuffer;
  /** Turns at SQLite's write lock (src/store/write-turns.ts): this thread goes first, as the main thread does. */
  writeTurns: SharedArrayBuffer;
}

export function toWireError(err: unknown): WireError {
  if (isDatabaseUnavailable(err)) err = ApiError.databaseUnavailable(); // its code does not cross
  if (err instanceof ApiError) return { status: err.status, type: err.type, details: err.details };
  if (err instanceof IdempotencyConflict) return { message: err.message, name: IdempotencyConflict.name };
  const code = (err as { code?: unknown } | null)?.code;
  return {
    message: err instanceof Error ? err.message : String(err),
    ...(err instanceof Error ? { name: err.name } : {}),
    ...(typeof code === 'string' ? { code } : {}),
  };
}

export function fromWireError(w: WireError): Error {
  if ('status' in w) return new ApiError(w.status, w.type, w.details);
  if (w.name === IdempotencyConflict.name) return new IdempotencyConflict();
  const err = new Error(w.message);
  if (w.name) err.name = w.name;
  if (w.code !== undefined) Object.assign(err, { code: w.code });
  return err;
}

interface Pending {
  resolve(r: { uid: string }): void;
  reject(err: unknown): void;
  /** performance.now() when the create was handed over. */
  handedAt: number;
}

export class CreatesThread implements CreatesWriter {
  private readonly thread: SupervisedWorker;
  private nextId = 1;
  private readonly inFlight = new Map<number, Pending>();
  private outbox: WireCreate[] = [];
  private memoryReport: ThreadMemory | null = null;
  private readonly waited: CreatesWaits = { written: { seconds: 0, count: 0 }, flushed: { seconds: 0, count: 0 } };

  /**
   * `local`: writes creates on this thread while the thread is not running. `announce`: told the job
   * kinds that committed creates enqueued.
   */
  constructor(
    private readonly opts: {
      config: Config;
      installation: Installation;
      log: Logger;
      local: CreatesWriter;
      announce(kinds: string[]): void;
    },
  ) {
    this.thread = new SupervisedWorker({
      what: "the creates' thread",
      log: opts.log,
      readyTimeoutMs: READY_TIMEOUT_MS,
      stopTimeoutMs: STOP_TIMEOUT_MS,
      meanwhile: 'creates are written on the main thread until then',
      spawn: () => {
        const data: CreatesThreadData = {
          config: this.opts.config,
          installation: this.opts.installation,
          rowVersions: rowVersions().buffer,
          writeTurns: writeTurns().buffer,
        };
        const [entry, how] = threadStart('main-creates-thread');
        return new Worker(entry, { ...how, workerData: data, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
      },
      onMessage: (m) => {
        const answered = m as Extract<FromCreates, { answers: WireAnswer[] }>;
        if ('answers' in answered) this.settle(answered);
        else if ('memory' in (m as object)) this.memoryReport = (m as Extract<FromCreates, { memory: ThreadMemory }>).memory;
      },
      onExit: () => this.failInFlight(),
    });
  }

  /** Resolves once the thread answers; rejects if it fails or stalls before that. */
  async start(): Promise<void> {
    await this.thread.start();
  }

  submit(appUid: string, environment: AppEnvironment, params: AssetParams, idem?: IdempotentWrite): Promise<{ uid: string }> {
    if (!this.thread.running) return this.opts.local.submit(appUid, environment, params, idem);
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.inFlight.set(id, { resolve, reject, handedAt: performance.now() });
      this.outbox.push({ id, appUid, environment, params, ...(idem ? { idem } : {}) });
      // One message per event-loop turn: the creates parsed in this turn travel together.
      if (this.outbox.length === 1) setImmediate(() => this.flush());
    });
  }

  /** For /health. */
  status(): { running: boolean; restarts: number } {
    return { running: this.thread.running, restarts: this.thread.restarts };
  }

  /** The thread's heap as it last reported it (null before its first report, or while it does not run). */
  memory(): ThreadMemory | null {
    return this.thread.running ? this.memoryReport : null;
  }

  /** Where the answered creates waited so far (see CreatesWaits). */
  waits(): CreatesWaits {
    return this.waited;
  }

  /** Creates handed to the thread and not answered yet. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** Ends the thread at once, as a crash would; it is restarted as after one (the tests check that recovery). */
  async terminate(): Promise<void> {
    await this.thread.terminate();
  }

  /** Lets the thread finish (and answer) what it was given, then ends it; terminated after 20 s. */
  async stop(): Promise<void> {
    this.flush();
    await this.thread.stop();
  }

  private flush(): void {
    if (!this.outbox.length) return;
    const creates = this.outbox;
    this.outbox = [];
    if (this.thread.post({ creates } satisfies ToCreates)) return;
    // The thread stopped between submit and flush: these are written here instead.
    for (const c of creates) {
      const pending = this.take(c.id)!;
      this.opts.local.submit(c.appUid, c.environment, c.params, c.idem).then(pending.resolve, pending.reject);
    }
  }

  /** The answers of committed groups, on disk already (the thread flushed before it sent them). */
  private settle({ answers, announce, flushedMs }: Extract<FromCreates, { answers: WireAnswer[] }>): void {
    const answeredAt = performance.now();
    for (const a of answers) {
      const pending = this.take(a.id);
      if (!pending) continue;
      this.waited.written.seconds += (answeredAt - pending.handedAt - flushedMs) / 1000;
      this.waited.written.count++;
      this.waited.flushed.seconds += flushedMs / 1000;
      this.waited.flushed.count++;
      if ('uid' in a) pending.resolve({ uid: a.uid });
      else pending.reject(fromWireError(a.error));
    }
    if (announce.length) this.opts.announce(announce);
  }

  private take(id: number): Pending | undefined {
    const pending = this.inFlight.get(id);
    this.inFlight.delete(id);
    return pending;
  }

  /** The thread ended with creates unanswered: their groups may or may not have committed. */
  private failInFlight(): void {
    this.flush(); // not sent yet: written here
    for (const [, pending] of this.inFlight)
      pending.reject(
        new Error(
          "the creates' thread stopped before answering; the create may or may not have been written: send it again with the same Idempotency-Key or asset_external_id",
        ),
      );
    this.inFlight.clear();
  }
}
