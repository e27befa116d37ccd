// Finding anvil processes by their command line (/proc on Linux, `ps` elsewhere): a pidfile can be
// stale or name a reused pid, so a process counts as ours only if its argv says it is anvil on our state.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { isAlive } from './processes.js';

/** argv of a process, or null if it cannot be read. */
export function readCmdline(pid: number): string[] | null {
  try {
    const raw = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const argv = raw.split('\0');
    if (argv.length > 0 && argv[argv.length - 1] === '') argv.pop();
    return argv.length > 0 ? argv : null;
  } catch (err) {
    if (process.platform === 'linux') return null;
    void err;
  }
  try {
    const out = execFileSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8' }).trim();
    return out ? out.split(/\s+/) : null;
  } catch {
    return null;
  }
}

export function isAnvilArgv(argv: string[]): boolean {
  const exe = path.basename(argv[0] ?? '');
  return exe === 'anvil' || exe === 'anvil.exe';
}

export function argValue(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  if (i >= 0) return argv[i + 1];
  const inline = argv.find((a) => a.startsWith(`${flag}=`));
  return inline?.slice(flag.length + 1);
}

/** Linux only: pids of anvil processes whose `--state` is `statePath`. */
export function findAnvilsOnState(statePath: string): number[] {
  if (process.platform !== 'linux') return [];
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    const argv = readCmdline(pid);
    if (!argv || !isAnvilArgv(argv)) continue;
    const st = argValue(argv, '--state');
    if (st && path.resolve(st) === statePath && isAlive(pid)) found.push(pid);
  }
  return found;
}
