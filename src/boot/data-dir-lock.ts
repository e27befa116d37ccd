// Who is using a DATA_DIR. Each process that uses one holds a listening Unix socket named after it for
// its whole life: the kernel closes the socket when the process ends, however it ends (kill -9, a
// crash), so a lock is never left behind and never has to be guessed stale from a pid.
//
// Two modes:
//  - exclusive: the DATA_DIR is this process's alone (a SQLite database, an embedded chain's state);
//    it is bound at `<name>.x`;
//  - shared: processes of one PostgreSQL installation share the DATA_DIR (its content store); each binds
//    the first free of `<name>.s.0` … `<name>.s.63`.
// A taker first binds its own name, then looks for the other mode's names: of two processes starting
// together at least one sees the other, so two never both go on (at worst both refuse). A shared slot
// whose holder does not answer in time (processes of one installation starting together on a busy
// machine) is passed over for the next: who holds it does not matter to a shared taker.
//
// On Linux the sockets are abstract (no file, nothing to clean up); elsewhere they are files in the
// system's temporary directory, and one that refuses connections is a dead process's and is removed.
// A connection to a lock socket is answered with one JSON line: the holder's pid, DATA_DIR and PORT,
// so a refusal can name it. A process that serves a PORT also binds `mintworks-port-<port>`, so a
// port-in-use message can say it is another Mintworks, and which.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export type LockMode = 'exclusive' | 'shared';

export interface LockHolder {
  pid: number;
  dataDir: string;
  /** The HTTP port the holder serves (0: none). */
  port: number;
}

export class DataDirInUseError extends Error {
  constructor(
    readonly holder: LockHolder,
    what: string,
  ) {
    super(`another Mintworks (pid ${holder.pid}) is using ${what} ${holder.dataDir}: stop it, or give this one a DATA_DIR of its own`);
  }
}

const PREFIX = 'mintworks-lock-';
/** Shared holders of one DATA_DIR at the same time (processes of one installation on one machine). */
const SHARED_SLOTS = 64;
const abstract = process.platform === 'linux';

const nameOf = (dataDir: string, scope: string) =>
  PREFIX +
  crypto
    .createHash('sha256')
    .update(`${scope}\0${realDir(dataDir)}`)
    .digest('hex')
    .slice(0, 24);
const addressOf = (name: string) => (abstract ? `\0${name}` : path.join(os.tmpdir(), `${name}.sock`));

function realDir(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/** The holder behind a lock socket, or null when nobody listens there any more. */
export function askHolder(name: string, timeoutMs = 1_000): Promise<LockHolder | null> {
  return new Promise((resolve) => {
    const sock = net.connect({ path: addressOf(name) });
    let buf = '';
    const done = (v: LockHolder | null) => {
      sock.destroy();
      resolve(v);
    };
    sock.setTimeout(timeoutMs, () => done(null));
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      try {
        const v = JSON.parse(buf.slice(0, nl)) as LockHolder;
        done(Number.isInteger(v.pid) ? v : null);
      } catch {
        done(null);
      }
    });
    sock.on('error', () => done(null));
    sock.on('end', () => done(null));
  });
}

interface Held {
  server: net.Server;
  count: number;
}
// Per process: one socket per name, however many services of this process use the DATA_DIR.
const held = new Map<string, Held>();

function listen(name: string, info: LockHolder): Promise<net.Server | 'in-use'> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((sock) => {
      sock.on('error', () => {});
      sock.end(JSON.stringify(info) + '\n');
    });
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve('in-use') : reject(err)));
    server.listen({ path: addressOf(name) }, () => {
      server.unref(); // a lock never keeps the process alive
      resolve(server);
    });
  });
}

/**
 * Binds `name`, or says who holds it. `unanswered`: bound by a process that did not answer in time (a
 * busy machine, or one still starting: a process binds its slot before it can answer on it).
 */
async function bind(name: string, info: LockHolder): Promise<Held | LockHolder | 'unanswered'> {
  const mine = held.get(name);
  if (mine) return mine;
  for (let attempt = 0; ; attempt++) {
    const r = await listen(name, info);
    if (r !== 'in-use') {
      const h = { server: r, count: 0 };
      held.set(name, h);
      return h;
    }
    const holder = await askHolder(name);
    if (holder) return holder;
    // Nobody answers: a socket file a dead process left (never the case for abstract sockets), or a holder too busy to answer.
    if (abstract || attempt > 0) return 'unanswered';
    fs.rmSync(addressOf(name), { force: true });
  }
}

function unbind(name: string): void {
  const h = held.get(name);
  if (!h || --h.count > 0) return;
  held.delete(name);
  h.server.close();
}

/**
 * Takes the lock on `dataDir` (`scope` names one use of it: 'data', 'chain') for as long as the process
 * runs, or until the returned release is called. Refuses with DataDirInUseError naming the other
 * process. Services of this same process (threads, tests) share what it holds.
 */
export async function lockDataDir(dataDir: string, mode: LockMode, opts: { port?: number; scope?: string; what?: string } = {}): Promise<() => void> {
  const base = nameOf(dataDir, opts.scope ?? 'data');
  const info: LockHolder = { pid: process.pid, dataDir: realDir(dataDir), port: opts.port ?? 0 };
  const what = opts.what ?? 'DATA_DIR';
  const slots = Array.from({ length: SHARED_SLOTS }, (_, k) => `${base}.s.${k}`);
  let own: string | null = null;
  for (const name of mode === 'exclusive' ? [`${base}.x`] : slots) {
    const got = await bind(name, info);
    if (got === 'unanswered') {
      // A shared slot is taken whoever holds it: the next one. An exclusive lock must name its holder.
      if (mode === 'shared') continue;
      throw new Error(`cannot take the DATA_DIR lock ${addressOf(name)}: it is bound but nobody answers`);
    }
    if ('server' in got) {
      got.count++;
      own = name;
      break;
    }
    if (got.pid === process.pid) return () => {}; // this process holds it already (a thread, a test)
    if (mode === 'exclusive') throw new DataDirInUseError(got, what);
  }
  if (!own) throw new Error(`more than ${SHARED_SLOTS} processes use DATA_DIR ${info.dataDir}`);
  const owned = [own];
  try {
    const others = mode === 'exclusive' ? slots : [`${base}.x`];
    for (const holder of await Promise.all(others.map((n) => askHolder(n)))) {
      if (holder && holder.pid !== process.pid) throw new DataDirInUseError(holder, what);
    }
    // Naming the port it serves: best effort (a port taken by another program is refused at bind).
    if (info.port > 0) {
      const got = await bind(`mintworks-port-${info.port}`, info).catch(() => null);
      if (got && got !== 'unanswered' && 'server' in got) {
        got.count++;
        owned.push(`mintworks-port-${info.port}`);
      }
    }
  } catch (err) {
    owned.forEach(unbind);
    throw err;
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    owned.forEach(unbind);
  };
}

/** Another Mintworks of this machine that serves `port`, if there is one (for the port-in-use message). */
export async function mintworksOnPort(port: number): Promise<LockHolder | null> {
  const holder = await askHolder(`mintworks-port-${port}`, 500);
  return holder && holder.pid !== process.pid ? holder : null;
}
