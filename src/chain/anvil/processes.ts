// Small helpers about other processes (liveness, CPU priority), used by the embedded chain's supervisor.
import fs from 'node:fs';
import os from 'node:os';

export function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

export const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** True if `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if (errCode(err) !== 'EPERM') return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return false;
  } catch {
    /* no procfs (non-Linux) or raced with exit: trust kill(0) */
  }
  return true;
}

/** Waits until `pid` is gone; false if it is still there after `timeoutMs`. */
export async function pollUntilDead(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let backoff = 10;
  while (isAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await delay(backoff);
    backoff = Math.min(backoff * 2, 100);
  }
  return true;
}

/**
 * Lowers the CPU priority of every thread of `pid` to `nice` (never raises it). Linux keeps a nice value
 * per thread and a renice of the pid reaches only its first thread, so each thread of /proc/<pid>/task
 * is set; a thread the process starts later inherits the value of the thread that starts it. Elsewhere
 * the value is the process's. Throws what the system refuses.
 */
export function lowerPriority(pid: number, nice: number): void {
  let tids: number[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    tids = [pid]; // no procfs: the process's priority
  }
  for (const tid of tids) {
    try {
      if (os.getPriority(tid) < nice) os.setPriority(tid, nice);
    } catch (err) {
      if (tid === pid || isAlive(tid)) throw err; // else the thread ended meanwhile
    }
  }
}
