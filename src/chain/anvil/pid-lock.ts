// Files that tie a data dir to its anvil: `anvil.pid` names the running node (so a later start adopts
// it), `anvil.lock` serialises concurrent starts on one data dir.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { delay, errCode, isAlive } from './processes.js';

export const PID_FILE = 'anvil.pid';
export const LOCK_FILE = 'anvil.lock';
const LOCK_TIMEOUT_MS = 60_000;

export interface PidFile {
  pid: number;
  port: number;
  chainId: number;
  startedAt: string;
}

export function readPidFile(file: string, log: Logger): PidFile | null {
  let raw: string;
  try {
    raw = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if (errCode(err) === 'ENOENT') return null;
    throw err;
  }
  try {
    const v = JSON.parse(raw) as Partial<PidFile>;
    if (typeof v.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0) {
      return { pid: v.pid, port: Number(v.port), chainId: Number(v.chainId), startedAt: String(v.startedAt) };
    }
  } catch {
    /* fall through */
  }
  log.warn({ file }, 'ignoring unreadable anvil pidfile');
  return null;
}

export function writePidFile(file: string, content: PidFile): void {
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(content) + '\n');
  fs.renameSync(tmp, file);
}

/** Removes the pidfile if it (still) names `pid` (or unconditionally when pid is undefined). */
export function removePidFile(file: string, pid?: number): void {
  try {
    if (pid !== undefined) {
      const raw = fs.readFileSync(file, 'utf8');
      const cur = (JSON.parse(raw) as Partial<PidFile>).pid;
      if (cur !== pid) return;
    }
    fs.unlinkSync(file);
  } catch {
    /* already gone / unreadable: nothing to do */
  }
}

/**
 * Cross-process (and in-process) exclusive lock around start-up on one data
 * dir. The lock file holds the owner's pid; a lock whose owner is dead is stale.
 */
export async function acquireLock(file: string, log: Logger): Promise<() => void> {
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  let warned = false;
  for (;;) {
    try {
      const fd = fs.openSync(file, 'wx');
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      return () => {
        try {
          fs.unlinkSync(file);
        } catch {
          /* ignore */
        }
      };
    } catch (err) {
      if (errCode(err) !== 'EEXIST') throw err;
    }
    let owner = NaN;
    let ageMs = 0;
    try {
      owner = Number.parseInt(fs.readFileSync(file, 'utf8'), 10);
      ageMs = Date.now() - fs.statSync(file).mtimeMs;
    } catch {
      continue; // vanished between open and read: retry immediately
    }
    // dead owner, an owner that never wrote its pid, or a lock older than any start-up can take (pid reused)
    const stale = (Number.isInteger(owner) && owner > 0 ? !isAlive(owner) : ageMs > 2_000) || ageMs > LOCK_TIMEOUT_MS;
    if (stale) {
      log.warn({ file, owner }, 'removing stale anvil start-up lock');
      try {
        fs.unlinkSync(file);
      } catch {
        /* someone else removed it */
      }
      continue;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out waiting for ${file} (held by pid ${owner}): another start of the embedded chain is in progress`);
    }
    if (!warned) {
      log.info({ file, owner }, 'another start of the embedded chain is in progress on this data dir; waiting');
      warned = true;
    }
    await delay(50);
  }
}

/** The pid of the embedded anvil recorded in DATA_DIR, if that process is alive. */
export function runningAnvilPid(dataDir: string): number | null {
  try {
    const v = JSON.parse(fs.readFileSync(path.join(path.resolve(dataDir), PID_FILE), 'utf8')) as { pid?: unknown };
    return typeof v.pid === 'number' && isAlive(v.pid) ? v.pid : null;
  } catch {
    return null;
  }
}
