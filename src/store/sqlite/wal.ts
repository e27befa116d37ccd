// The SQLite WAL: checkpointed by a thread or timer of its own, and flushed (one fsync shared by every
// commit in flight) so that a commit is durable before anyone acts on it.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import { fromDatabase } from '../unavailable.js';
import type { Checkpoints } from '../db.js';

const require = createRequire(import.meta.url);

/**
 * Checkpoints the WAL every `everyMs` on a connection of its own (PASSIVE: it never waits for or blocks
 * the writer; frames a reader still needs are copied on a later round), and truncates it after a quiet
 * spell (QUIET_ROUNDS rounds) so it does not stay large. In a thread: eval'd source, so it runs the same
 * way from `dist/` and under tsx.
 */
export function startCheckpointer(file: string, where: Checkpoints, everyMs = 1000): { stop(): Promise<void> } {
  if (where === 'none') return { stop: async () => {} };
  if (where === 'inline') {
    const db = new SQLite(file);
    db.pragma('busy_timeout = 0'); // never sleep on this event loop; a busy round is retried next time
    const round = checkpointRound(db);
    const timer = setInterval(round, everyMs);
    timer.unref();
    return {
      stop: async () => {
        clearInterval(timer);
        db.close();
      },
    };
  }
  const code = `
    const { workerData } = require('node:worker_threads');
    const Database = require(workerData.module);
    const db = new Database(workerData.file);
    // PASSIVE never waits. TRUNCATE does, holding off the writers meanwhile: for a reader still on the
    // WAL it waits this long at most, and a round that gives up is retried the next time.
    db.pragma('busy_timeout = 50');
    const round = (${checkpointRound.toString()})(db);
    setInterval(round, workerData.everyMs);`;
  const worker = new Worker(code, { eval: true, workerData: { module: require.resolve('better-sqlite3'), file, everyMs } });
  worker.unref();
  return { stop: async () => void (await worker.terminate()) };
}

/**
 * One checkpoint round on `db` (plain JavaScript: it is also eval'd in the checkpointer thread). A WAL
 * copied back whole keeps its size: SQLite writes it again from its start only when a write begins
 * after such a copy, which a burst's back-to-back writes never do, and a WAL that is never written
 * again stays as it is. A burst writes about 10 KB a create to it (670 MB for 70,000). So once
 * QUIET_ROUNDS rounds in a row found nothing new and all of it copied back, the WAL is truncated; a
 * truncation that could not finish (a reader still on the WAL) is tried again the next round.
 */
function checkpointRound(db: { pragma(s: string): unknown }): () => void {
  const QUIET_ROUNDS = 5;
  let quiet = 0;
  let lastLog = -1;
  return () => {
    try {
      const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
      quiet = r.log === lastLog && r.checkpointed === r.log ? quiet + 1 : 0;
      lastLog = r.log;
      if (quiet >= QUIET_ROUNDS && r.log > 0) db.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      /* busy: the next round copies what this one could not */
    }
  };
}

/**
 * fsync of the SQLite WAL file in the thread pool. With synchronous = NORMAL a WAL commit is written to
 * the file but not flushed; flushing the file afterwards makes it exactly as durable as a FULL commit
 * (which is that same write plus an fsync of the WAL). The WAL is one file written in order, so every
 * flush also covers every earlier commit of any connection: a worker that reads a row and then commits
 * before acting on the chain never acts on a row a power cut could take back. One fsync runs at a time;
 * callers that committed while it ran share the next one.
 */
export class WalSync {
  private fd: number | null = null;
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private closed = false;

  /** `byCaller`: commits do not flush (`sync`); the store's users do (`flush`). */
  constructor(
    private readonly file: string,
    private readonly byCaller = false,
  ) {}

  /** After a commit. */
  sync(): Promise<void> {
    return this.byCaller ? Promise.resolve() : this.flushAll();
  }

  /** Every commit so far (of any connection to the file) on disk. */
  flushAll(): Promise<void> {
    // Closed: the connections are gone and their commits flushed by close(); the file is not opened again.
    if (this.closed) return Promise.resolve();
    if (!this.running) {
      this.running = this.flush().finally(() => (this.running = null));
      return this.running;
    }
    // The running fsync may have started before this caller's commit: it needs the next one.
    this.queued ??= this.running.then(() => {
      this.queued = null;
      return this.flushAll();
    });
    return this.queued;
  }

  /**
   * The same flush, on this thread: it returns once every commit so far is on disk. For a thread that
   * has nothing else to do meanwhile (the creates' thread, between two groups): a flush in the thread
   * pool would end in a callback its event loop sees only after the group it writes next.
   */
  flushNow(): void {
    if (this.closed) return;
    try {
      fs.fdatasyncSync(this.openFile());
    } catch (err) {
      throw fromDatabase(err);
    }
  }

  private openFile(): number {
    this.fd ??= fs.openSync(this.file, 'r');
    return this.fd;
  }

  private async flush(): Promise<void> {
    const fd = this.openFile();
    // fdatasync, as SQLite itself uses: it flushes the data and the size, not the timestamps.
    await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(fromDatabase(err)) : resolve())));
  }

  /** After the connections are closed: the flushes under way end first, so none runs on a closed file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([this.running, this.queued]);
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}
