// The chain state file (`chain.json`): anvil rewrites it in place, so a kill during a dump can leave it
// truncated. A verified-complete copy (`chain.json.bak`) is kept to fall back to, and copies for a
// backup are taken only when the file did not change while it was read.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { delay, errCode } from './processes.js';
import { runningAnvilPid } from './pid-lock.js';

export const STATE_FILE = 'chain.json';
/** Seconds between anvil's periodic dumps of its state. */
export const STATE_INTERVAL_S = 5;
const BACKUP_INTERVAL_MS = 60_000;

export function timestampForFilename(d = new Date()): string {
  return d.toISOString().replace(/[:.]/g, '-');
}

export function checkStateSaved(statePath: string, since: number, log: Logger): void {
  try {
    const st = fs.statSync(statePath);
    if (st.mtimeMs + 1_000 < since) {
      log.error({ statePath, mtime: new Date(st.mtimeMs).toISOString() }, 'anvil exited but did not rewrite its state file on shutdown');
    }
  } catch {
    log.error({ statePath }, 'anvil exited but its state file does not exist: chain state was NOT saved');
  }
}

/**
 * Copies chain.json to chain.json.bak if it is complete: not modified in the last
 * second (unless `justLoaded`: anvil has just parsed it and will not write it before
 * its first --state-interval tick), unchanged while we copied it, and looks like a
 * whole JSON object. Returns true if a new backup was written.
 */
export async function backupState(statePath: string, log: Logger, justLoaded = false): Promise<boolean> {
  const bak = `${statePath}.bak`;
  const tmp = `${bak}.tmp`;
  try {
    const before = await fsp.stat(statePath);
    if (before.size < 2 || (!justLoaded && Date.now() - before.mtimeMs < 1_000)) return false; // being (re)written
    const old = await fsp.stat(bak).catch(() => null);
    if (old && old.size === before.size && Math.abs(old.mtimeMs - before.mtimeMs) < 1) return false; // up to date
    await fsp.copyFile(statePath, tmp);
    const after = await fsp.stat(statePath);
    const copy = await fsp.stat(tmp);
    if (after.mtimeMs !== before.mtimeMs || after.size !== before.size || copy.size !== before.size || !(await looksLikeJsonObject(tmp, copy.size))) {
      await fsp.rm(tmp, { force: true });
      return false;
    }
    await fsp.utimes(tmp, before.atime, before.mtime); // bak mtime = time of the anvil dump it copies
    await fsp.rename(tmp, bak);
    return true;
  } catch (err) {
    if (errCode(err) !== 'ENOENT') log.warn({ err, statePath }, 'could not back up the chain state file');
    await fsp.rm(tmp, { force: true }).catch(() => {});
    return false;
  }
}

async function looksLikeJsonObject(file: string, size: number): Promise<boolean> {
  const fh = await fsp.open(file, 'r');
  try {
    const n = Math.min(size, 64);
    const head = Buffer.alloc(n);
    const tail = Buffer.alloc(n);
    await fh.read(head, 0, n, 0);
    await fh.read(tail, 0, n, size - n);
    return head.toString('latin1').trimStart().startsWith('{') && tail.toString('latin1').trimEnd().endsWith('}');
  } finally {
    await fh.close();
  }
}

/** Periodic backupState(); returns a function that stops it. */
export function startBackupLoop(statePath: string, log: Logger): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void backupState(statePath, log).finally(() => {
      running = false;
    });
  }, BACKUP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * A complete copy of the embedded chain's state file at `dest`, taken while anvil may be rewriting it
 * in place (every STATE_INTERVAL_S): a copy counts only if the file was not changed while it was read
 * and parses as JSON. Tries for `timeoutMs`; false if there is no state file and no running chain.
 */
export async function copyChainState(dataDir: string, dest: string, timeoutMs = 30_000): Promise<boolean> {
  const statePath = path.join(path.resolve(dataDir), STATE_FILE);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const before = await fsp.stat(statePath).catch(() => null);
    // A chain started moments ago writes its first state within STATE_INTERVAL_S: wait for it.
    if (!before && runningAnvilPid(dataDir) === null) return false;
    if (!before) {
      if (Date.now() > deadline) throw new Error(`the running embedded chain wrote no ${statePath} within ${timeoutMs / 1000} s`);
      await delay(200);
      continue;
    }
    if (before.size > 1) {
      await fsp.copyFile(statePath, dest);
      const after = await fsp.stat(statePath);
      if (after.mtimeMs === before.mtimeMs && after.size === before.size) {
        try {
          JSON.parse(await fsp.readFile(dest, 'utf8'));
          return true;
        } catch {
          /* caught mid-write: try again */
        }
      }
    }
    if (Date.now() > deadline) throw new Error(`could not take a complete copy of ${statePath} within ${timeoutMs / 1000} s (it kept changing)`);
    await delay(200);
  }
}
