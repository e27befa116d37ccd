// Turns at SQLite's write lock between the threads of one process: the API's (main) thread, the
// creates' thread and the workers' thread each have a connection, and SQLite lets one write at a time.
// A connection that finds the lock taken waits for it without blocking its event loop
// (BusyRetryConnection). Two things make that wait short and fair for requests:
// - A thread that releases the lock (commit, rollback, a write on its own) says so in shared memory, and
//   a waiting thread wakes at once instead of at its next timer.
// - The threads that answer requests (main, creates) go first: while one waits for the lock (a group
//   of creates whose clients wait for their 201), the workers do not begin another transaction, for at
//   most `MAIN_FIRST_MAX_MS`. The workers' thread ran transactions back to back (claim, mint, apply
//   outcomes) and took the lock again before the API's retry timer fired, so requests waited for
//   several of them.
// Another process on the same file (the CLI) is not in shared memory: waits for it end by timer.
// The same shared memory also says when a burst of creates is being written (`afterBurst`).
import { isMainThread } from 'node:worker_threads';

/** Longest a workers' transaction waits for the main thread to have had its turn. */
export const MAIN_FIRST_MAX_MS = 20;
/** Creates committed in a group at least this large are a burst (under light load groups hold one or two). */
export const BURST_GROUP = 4;
/**
 * A burst is over once no such group has been committed for this long. On PostgreSQL a group now and
 * then takes longer than 25 ms under a burst, which read as a pause and let a full mint batch in.
 */
export const BURST_QUIET_MS = 100;

// Node has Atomics.waitAsync; TypeScript's library for our target does not declare it yet.
type WaitAsync = (
  cells: Int32Array,
  index: number,
  value: number,
  timeoutMs: number,
) => { async: false; value: string } | { async: true; value: Promise<string> };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

const RELEASES = 0;
const MAIN_WAITING = 1;
/**
 * Threads waiting on a cell right now. Waking nobody still cost an Atomics.notify per statement (4 % of
 * the workers' thread under a burst): it is skipped when nobody waits. A waiter counts itself before
 * it compares the cell, and a notifier changes the cell before it reads the count (both sequentially
 * consistent), so a waiter either is seen and woken or sees the change and does not wait.
 */
const WAITERS = 2;

export class WriteTurns {
  private readonly cells: Int32Array;
  /** When the last burst group of creates was committed (ms since the epoch). */
  private readonly lastBurst: BigInt64Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(16 + 8)) {
    this.cells = new Int32Array(buffer, 0, 3);
    this.lastBurst = new BigInt64Array(buffer, 16, 1);
  }

  /** A group of `size` creates was committed: a group of BURST_GROUP or more says a burst is on. */
  createsCommitted(size: number): void {
    if (size >= BURST_GROUP) Atomics.store(this.lastBurst, 0, BigInt(Date.now()));
  }

  /**
   * Before the workers take on more minting: while a burst of creates is being written, waits for it to
   * pause (BURST_QUIET_MS without a burst group), at most `maxMs`. Minting costs about as much CPU as
   * accepting; on a machine the API, the workers and the chain share, a burst is accepted at close to
   * the API's own speed when minting waits for it, and minting catches up right after (bounded: at
   * least one batch per `maxMs` goes on during a long burst). Resolves `true` when it gave up at
   * `maxMs` with the burst still on (the caller then takes a small share), `false` once it paused.
   */
  async afterBurst(maxMs: number): Promise<boolean> {
    const deadline = Date.now() + maxMs;
    for (;;) {
      const quietAt = Number(Atomics.load(this.lastBurst, 0)) + BURST_QUIET_MS;
      const now = Date.now();
      if (now >= quietAt) return false;
      if (now >= deadline) return true;
      await new Promise((r) => setTimeout(r, Math.min(quietAt, deadline) - now));
    }
  }

  /** The lock was released: wake whoever waits for it. */
  released(): void {
    Atomics.add(this.cells, RELEASES, 1);
    if (Atomics.load(this.cells, WAITERS) > 0) Atomics.notify(this.cells, RELEASES);
  }

  /** A mark to wait from: `untilReleased(mark, ms)` returns at the first release after it. */
  mark(): number {
    return Atomics.load(this.cells, RELEASES);
  }

  /** Resolves at the first release after `mark`, or after `ms`. */
  async untilReleased(mark: number, ms: number): Promise<void> {
    await this.waitChange(RELEASES, mark, ms);
  }

  /** The main thread waits for the lock (true) or has it / gave up (false). */
  mainWaiting(waiting: boolean): void {
    Atomics.add(this.cells, MAIN_WAITING, waiting ? 1 : -1);
    if (!waiting && Atomics.load(this.cells, WAITERS) > 0) Atomics.notify(this.cells, MAIN_WAITING);
  }

  /** Whether the main thread waits for the lock now: a workers' transaction that can end early does. */
  mainIsWaiting(): boolean {
    return Atomics.load(this.cells, MAIN_WAITING) > 0;
  }

  /** In the workers' thread, before taking the lock: lets a waiting main thread go first (bounded). */
  async mainFirst(maxMs = MAIN_FIRST_MAX_MS): Promise<void> {
    const deadline = Date.now() + maxMs;
    for (;;) {
      const waiting = Atomics.load(this.cells, MAIN_WAITING);
      const left = deadline - Date.now();
      if (waiting <= 0 || left <= 0) return;
      await this.waitChange(MAIN_WAITING, waiting, left);
    }
  }

  /**
   * Until the cell is no longer `value`, or `ms` passed. A pending Atomics.waitAsync does not keep
   * Node's event loop alive: a timer beside it does, for as long as the wait may last.
   */
  private async waitChange(index: number, value: number, ms: number): Promise<void> {
    Atomics.add(this.cells, WAITERS, 1);
    try {
      const w = waitAsync(this.cells, index, value, ms);
      if (!w.async) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([w.value, new Promise((r) => (timer = setTimeout(r, ms)))]);
      clearTimeout(timer);
    } finally {
      Atomics.sub(this.cells, WAITERS, 1);
    }
  }
}

// The process's turns: made by the main thread, handed to the threads it starts (boot/threads/workers-thread.ts,
// boot/threads/creates-thread.ts).
let processTurns = new WriteTurns();
/** Whether this thread's writes answer requests (the main thread, the creates' thread): they go first. */
let answersRequests = isMainThread;

export function writeTurns(): WriteTurns {
  return processTurns;
}

/** Whether this thread goes first at the write lock (see above). */
export function goesFirst(): boolean {
  return answersRequests;
}

/**
 * In a thread started by the main thread: share its turns. `first`: this thread writes what requests
 * wait for (the creates' thread), and goes first like the main thread; the workers' thread does not.
 */
export function adoptWriteTurns(buffer: SharedArrayBuffer, first = false): void {
  processTurns = new WriteTurns(buffer);
  answersRequests = first;
}
