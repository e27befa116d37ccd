// Who is using a DATA_DIR. Each process that uses one holds a listening Unix socket named after it for
// its whole life: the kernel closes the socket when the process ends, however it ends (kill -9, a
// crash), so a lock is never left behind and never has to be guessed stale from a pid.
//
// Two modes:
//  - exclusive: the DATA_DIR is this process's alone (a SQLite database, an embedded chain's state);
//    it is bound at `<name>.x`;
//  - shared: processes of one PostgreSQL installation share the DATA_DIR (its content store); each binds
//    `<name>.s.<pid>`.
// A taker first binds its own name, then looks for the other mode's names: of two processes starting
// together at least one sees the other, so two never both go on (at worst both refuse).
//
// On Linux the sockets are abstract (no file, nothing to clean up); elsewhere they are files in the
// system's temporary directory, and one that refuses connections is a dead process's and is removed.
// A connection to a lock socket is answered with one JSON line: the holder's pid, DATA_DIR and PORT,
// so a refusal can name it and a port-in-use message can say it is another Mintworks.
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
const abstract = process.platform === 'linux';

const nameOf = (dataDir: string, scope: string) => PREFIX + crypto.createHash('sha256').update(`${scope}\0${realDir(dataDir)}`).digest('hex').slice(0, 24);
const addressOf = (name: string) => (abstract ? `\0${name}` : path.join(os.tmpdir(), `${name}.sock`));

function realDir(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/** Every lock socket name present on this machine (for this user's temporary directory elsewhere). */
function lockNames(): string[] {
  if (abstract) {
    let table: string;
    try {
      table = fs.readFileSync('/proc/net/unix', 'utf8');
    } catch {
      return [];
    }
    return table
      .split('\n')
      .map((l) => l.trim().split(/\s+/).pop() ?? '')
      .filter((p) => p.startsWith(`@${PREFIX}`))
      .map((p) => p.slice(1));
  }
  try {
    return fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith(PREFIX) && f.endsWith('.sock')).map((f) => f.slice(0, -'.sock'.length));
  } catch {
    return [];
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

async function bind(name: string, info: LockHolder): Promise<Held | LockHolder> {
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
    // Nobody answers: a socket file a dead process left (never the case for abstract sockets).
    if (abstract || attempt > 0) throw new Error(`cannot take the DATA_DIR lock ${addressOf(name)}: it is bound but nobody answers`);
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
  const own = mode === 'exclusive' ? `${base}.x` : `${base}.s.${process.pid}`;
  const got = await bind(own, info);
  if (!('server' in got)) {
    if (got.pid !== process.pid) throw new DataDirInUseError(got, what);
    return () => {};
  }
  got.count++;
  try {
    const others = mode === 'exclusive' ? lockNames().filter((n) => n.startsWith(`${base}.s.`)) : [`${base}.x`];
    for (const n of others) {
      const holder = await askHolder(n);
      if (holder && holder.pid !== process.pid) throw new DataDirInUseError(holder, what);
    }
  } catch (err) {
    unbind(own);
    throw err;
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    unbind(own);
  };
}

/** Another Mintworks of this machine that serves `port`, if there is one (for the port-in-use message). */
export async function mintworksOnPort(port: number): Promise<LockHolder | null> {
  const names = [...new Set(lockNames())];
  const holders = await Promise.all(names.map((n) => askHolder(n, 300)));
  return holders.find((h) => h && h.port === port && h.pid !== process.pid) ?? null;
}
