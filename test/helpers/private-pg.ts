// A PostgreSQL cluster of the test's own (its directory, its port), for faults the shared server must
// never see: an immediate stop, a restart. Built with the installed server's initdb and pg_ctl, run as
// the postgres system user (the server refuses to run as root).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, tempDir } from './env.js';

const BIN = process.env.TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

function asPostgres(cmd: string, args: string[]): string {
  const run = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', path.join(BIN, cmd), ...args]] : [path.join(BIN, cmd), args];
  return execFileSync(run[0] as string, run[1] as string[], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export interface PrivateCluster {
  url: string;
  port: number;
  start(): void;
  /** `-m immediate`: every backend killed at once, no checkpoint (crash recovery at the next start). */
  stopImmediately(): void;
  /** Stops it (if running) and removes its directory. */
  destroy(): void;
}

/**
 * `tls`: the server's certificate and key (PEM files), copied into the cluster's directory (the server
 * reads them as the postgres user, the key 0600), with ssl=on; plain connections are still accepted.
 */
export async function privateCluster(opts: { tls?: { cert: string; key: string } } = {}): Promise<PrivateCluster> {
  const dir = tempDir('mintworks-pgcluster-');
  const data = path.join(dir, 'data');
  const owned: string[] = [dir];
  const serverOptions: string[] = [];
  if (opts.tls) {
    fs.copyFileSync(opts.tls.cert, path.join(dir, 'server.crt'));
    fs.copyFileSync(opts.tls.key, path.join(dir, 'server.key'));
    fs.chmodSync(path.join(dir, 'server.key'), 0o600);
    owned.push(path.join(dir, 'server.crt'), path.join(dir, 'server.key'));
    serverOptions.push('-c ssl=on', `-c ssl_cert_file=${path.join(dir, 'server.crt')}`, `-c ssl_key_file=${path.join(dir, 'server.key')}`);
  }
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    for (const f of owned) fs.chownSync(f, uid, gid);
  }
  asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const port = await freePort();
  let running = false;
  const cluster: PrivateCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start() {
      asPostgres('pg_ctl', [
        '-D',
        data,
        '-l',
        path.join(dir, 'server.log'),
        '-w',
        '-o',
        [`-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100`, ...serverOptions].join(' '),
        'start',
      ]);
      running = true;
    },
    stopImmediately() {
      asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      running = false;
    },
    destroy() {
      if (running) {
        try {
          asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
        } catch {
          /* already down */
        }
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}
