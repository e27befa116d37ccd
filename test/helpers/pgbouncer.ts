// Debian's PgBouncer in front of a PostgreSQL server, as managed providers put one in front of theirs:
// transaction pooling (a server connection per transaction, none held between them), its own port and
// configuration in a temporary directory, run as the postgres system user (it refuses to run as root).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, tempDir, waitFor } from './env.js';
import net from 'node:net';

export interface PgBouncer {
  /** The pooler's URL for `database` (the same name on the server behind it). */
  urlFor(database: string): string;
  port: number;
  /** PgBouncer's own log (what it said about clients and servers). */
  log(): string;
  stop(): void;
}

function asPostgres(cmd: string, args: string[]): void {
  const run: [string, string[]] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  execFileSync(run[0], run[1], { stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Starts PgBouncer in front of `server` (host:port, trust authentication for `user`). `poolSize`: server
 * connections per database and user, as a provider's plan allows.
 */
export async function startPgBouncer(opts: {
  server: { host: string; port: number };
  user?: string;
  poolSize?: number;
  mode?: 'transaction' | 'session';
}): Promise<PgBouncer> {
  const dir = tempDir('mintworks-pgbouncer-');
  const port = await freePort();
  const user = opts.user ?? 'postgres';
  const ini = path.join(dir, 'pgbouncer.ini');
  fs.writeFileSync(path.join(dir, 'userlist.txt'), `"${user}" ""\n`);
  fs.writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${opts.server.host} port=${opts.server.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      `pool_mode = ${opts.mode ?? 'transaction'}`,
      'max_client_conn = 1000',
      `default_pool_size = ${opts.poolSize ?? 20}`,
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    for (const f of ['', 'pgbouncer.ini', 'userlist.txt']) fs.chownSync(path.join(dir, f), uid, gid);
  }
  asPostgres('/usr/sbin/pgbouncer', ['-d', ini]); // -d: in the background once it listens
  await waitFor(
    'PgBouncer listening',
    () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.end();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      }),
    10_000,
    50,
  );
  const pid = Number(fs.readFileSync(path.join(dir, 'pgbouncer.pid'), 'utf8').trim());
  return {
    port,
    urlFor: (database) => `postgres://${user}@127.0.0.1:${port}/${database}`,
    log: () => fs.readFileSync(path.join(dir, 'pgbouncer.log'), 'utf8'),
    stop() {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        /* gone already */
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
