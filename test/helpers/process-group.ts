// `npm start` as a shell runs it, for the tests that cut its power: the service leads a process group
// of its own (detached), with the embedded chain inside it, so that kill -9 of the group takes both.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Starts dist/main.js with `env` added, its output appended to DATA_DIR/service.log. */
export function startServiceGroup(env: Record<string, string>): ChildProcess {
  const log = fs.openSync(path.join(env.DATA_DIR, 'service.log'), 'a');
  return spawn(process.execPath, [path.join(root, 'dist/main.js')], { env: { ...process.env, ...env }, detached: true, stdio: ['ignore', log, log] });
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
