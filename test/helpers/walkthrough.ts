// docs/production.md's runnable blocks (`<!-- walkthrough: NAME -->` before a bash block), and how a test
// runs one: with bash, errexit and pipefail, as a careful reader stops at the first error.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The document's runnable blocks, by name, in order. */
export function walkthroughBlocks(doc = 'docs/production.md'): Map<string, string> {
  const text = fs.readFileSync(path.join(root, doc), 'utf8');
  const blocks = new Map<string, string>();
  for (const m of text.matchAll(/<!-- walkthrough: ([\w-]+) -->\n```bash\n([\s\S]*?)\n```/g)) blocks.set(m[1], m[2]);
  return blocks;
}

/** Runs one block from the checkout; resolves with its output (stdout and stderr), rejects with it and the exit code. */
export function runWalkthroughBlock(name: string, code: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', code], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(Object.assign(new Error(`walkthrough block "${name}" exited ${code}:\n${out}`), { code, out })),
    );
  });
}

/** Whether a process is alive. */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The pids the walkthrough recorded under MW_HOME/run (and the chain's anvil). */
export function walkthroughPids(home: string): number[] {
  const pids: number[] = [];
  const run = path.join(home, 'run');
  for (const f of fs.existsSync(run) ? fs.readdirSync(run) : []) {
    const pid = Number(fs.readFileSync(path.join(run, f), 'utf8'));
    if (pid > 0) pids.push(pid);
  }
  const anvil = path.join(home, 'chain', 'anvil.pid');
  if (fs.existsSync(anvil)) pids.push((JSON.parse(fs.readFileSync(anvil, 'utf8')) as { pid: number }).pid);
  return pids;
}

/**
 * What the walkthrough's processes said last, for a failed block's error: each log under MW_HOME/logs,
 * its last warnings and errors (JSON lines at level 40 and up) or, in a log without any, its last lines.
 * The teardown removes MW_HOME, and a CI log is all a failed run leaves behind.
 */
export function processLogTails(home: string, lines = 8): string {
  const dir = path.join(home, 'logs');
  if (!fs.existsSync(dir)) return '';
  const parts: string[] = [];
  for (const f of fs.readdirSync(dir).sort()) {
    const all = fs.readFileSync(path.join(dir, f), 'utf8').trimEnd().split('\n');
    const loud = all.filter((l) => Number(/^\{"level":(\d+)/.exec(l)?.[1] ?? 0) >= 40);
    const shown = (loud.length ? loud : all).slice(-lines);
    parts.push(`--- ${f}, its last ${loud.length ? 'warnings and errors' : 'lines'}:\n${shown.join('\n')}`);
  }
  return parts.join('\n');
}

/** A failed block's error with the processes' log tails appended (see processLogTails). */
export function withProcessLogs(home: string, err: unknown): Error {
  const error = err instanceof Error ? err : new Error(String(err));
  const tails = processLogTails(home);
  if (tails) error.message += `\nWhat the processes said:\n${tails}`;
  return error;
}
