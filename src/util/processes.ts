// Small helpers about other processes (liveness), used by the embedded chain's supervisor.
import fs from 'node:fs';

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
