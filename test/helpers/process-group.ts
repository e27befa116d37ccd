// The service as a process of its own (dist/main.js), for the tests that run several or cut their power.
// `startServiceGroup` starts it as `npm start` in a shell does: leading a process group of its own
// (detached), with the embedded chain inside it, so that kill -9 of the group takes both.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Starts dist/main.js with `env` added, its output appended to DATA_DIR/`log`. */
export function startService(env: Record<string, string>, log = 'service.log', opts: { detached?: boolean } = {}): ChildProcess {
  const out = fs.openSync(path.join(env.DATA_DIR, log), 'a');
  return spawn(process.execPath, [path.join(root, 'dist/main.js')], { env: { ...process.env, ...env }, detached: opts.detached, stdio: ['ignore', out, out] });
}

/** Starts dist/main.js leading a process group of its own, its output appended to DATA_DIR/service.log. */
export function startServiceGroup(env: Record<string, string>): ChildProcess {
  return startService(env, 'service.log', { detached: true });
}

/** SIGTERM to each of `children` still running; resolves once every one has exited. */
export async function stopAll(children: readonly ChildProcess[]): Promise<void> {
  const running = children.filter((c) => c.exitCode === null && c.signalCode === null);
  for (const c of running) c.kill('SIGTERM');
  await Promise.all(running.map((c) => new Promise((r) => c.once('exit', r))));
}

/** Whether any process of the group `pgid` is still alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
