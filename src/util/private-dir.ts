// DATA_DIR holds the master key (unless MASTER_KEY is set), the operator token, the database with the
// sealed wallet seed, the chain state and the content store: only the service's own user may read it.
// The directory is 0700 and every file in it 0600 (directories 0700).
//
// New files: the process umask becomes 077 at start, so everything this process and its children create
// from then on is private without each writer having to remember it: SQLite's database and its -wal and
// -shm files, anvil's chain.json and its backups, the pid and lock files, the content store. Writers
// that know what they write also ask for 0600 themselves.
// Existing files (a DATA_DIR from an earlier version, or files copied in): tightened at start.
import fs from 'node:fs';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';

export const PRIVATE_FILE = 0o600;
export const PRIVATE_DIR = 0o700;

const prepared = new Set<string>();

export function preparePrivateDir(dir: string): void {
  // The umask belongs to the process: the main thread sets it (a worker thread may not, and need not).
  if (isMainThread) process.umask(0o077);
  const abs = path.resolve(dir);
  if (prepared.has(abs)) return; // once per process: the walk below is over every stored file
  fs.mkdirSync(abs, { recursive: true, mode: PRIVATE_DIR });
  tighten(abs);
  prepared.add(abs);
}

/** chmod go-rwx, recursively, without following symbolic links (a link may point anywhere). */
function tighten(dir: string): void {
  const st = fs.lstatSync(dir);
  if ((st.mode & 0o777) !== PRIVATE_DIR) fs.chmodSync(dir, PRIVATE_DIR);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) tighten(p);
    else if (entry.isFile()) {
      try {
        if ((fs.lstatSync(p).mode & 0o077) !== 0) fs.chmodSync(p, PRIVATE_FILE);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err; // removed meanwhile (a temp file)
      }
    }
  }
}
