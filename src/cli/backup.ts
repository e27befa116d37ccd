// `mintworks backup` and `mintworks restore`: one directory holding what an installation cannot be
// rebuilt without — the database, the keys (master.key seals the wallet seed: lose it and every
// wallet is lost), the embedded chain's state and the metadata files.
//
// Consistency: the chain state is copied first, then the database (SQLite's online backup: one
// consistent snapshot while the service runs), then the files. A database newer than the chain is
// what a power cut leaves, and the service repairs it on start (recorded transactions missing on
// chain are sent again, byte for byte); a chain newer than the database could not be repaired, so
// that order is never taken. On PostgreSQL the database is dumped by `pg_dump` when it is installed
// (and restored by `pg_restore`, which this command prints).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import type { Config } from '../config/config.js';
import { copyChainState, runningAnvilPid } from '../chain/anvil.js';
import { sqliteFile } from '../store/sqlite/open.js';
import { clientConfig } from '../store/postgres/connection.js';
import { UsageError, type Output } from './args.js';
import { lockDataDir } from '../boot/data-dir-lock.js';

const FORMAT = 1;
const MANIFEST = 'manifest.json';
const SQLITE_NAME = 'mintworks.sqlite';
const PG_DUMP_NAME = 'mintworks.pgdump';
/**
 * Single files of DATA_DIR that belong in a backup (those present): the keys only when the configuration
 * takes them from there (not from MASTER_KEY / OPERATOR_TOKEN), so a backup never carries a key of
 * another installation that shares the directory.
 */
const keyFiles = (config: Config) => [...(config.masterKeyHex ? [] : ['master.key']), ...(config.operatorToken ? [] : ['operator.token'])];

/**
 * The Demo App files of DATA_DIR that are this installation's: `demo.env` or `demo-<uid>.env` naming an
 * App of this database (another installation that used the directory left its own).
 */
async function demoFilesOf(config: Config, dbFile: string | null): Promise<string[]> {
  const files = fs.readdirSync(config.dataDir).filter((f) => /^demo(-\d+)?\.env$/.test(f));
  const appOf = (f: string) => /^MW_APP=(\d+)$/m.exec(fs.readFileSync(path.join(config.dataDir, f), 'utf8'))?.[1] ?? null;
  const wanted = files.map((f) => [f, appOf(f)] as const).filter(([, uid]) => uid !== null) as [string, string][];
  if (wanted.length === 0) return [];
  let known: Set<string>;
  if (dbFile) {
    const db = new SQLite(dbFile, { readonly: true, fileMustExist: true });
    try {
      known = new Set((db.prepare('select uid from apps').all() as { uid: string }[]).map((r) => r.uid));
    } finally {
      db.close();
    }
  } else {
    const client = new pg.Client(clientConfig(config.databaseUrl!, config.database));
    client.on('error', () => {});
    await client.connect();
    try {
      known = new Set((await client.query<{ uid: string }>('select uid from apps where uid = any($1)', [wanted.map(([, u]) => u)])).rows.map((r) => r.uid));
    } finally {
      await client.end().catch(() => {});
    }
  }
  return wanted.filter(([, uid]) => known.has(uid)).map(([f]) => f);
}
/** Directories of DATA_DIR with content the database points at: development files, UnixFS blocks. */
const CONTENT_DIRS = ['files', 'ipfs'];

export interface Manifest {
  format: number;
  created_at: string;
  chain_id: number;
  database: 'sqlite' | 'postgres';
  /** What the backup holds, relative to its directory. */
  contents: string[];
  /**
   * Where the master key is: in this backup (master.key), only in the MASTER_KEY the operator keeps, or
   * wrapped by an HSM token (KEY_CUSTODY=pkcs11): then the backup opens nothing without that token.
   */
  master_key: 'master.key' | 'MASTER_KEY' | 'hsm';
  /** With `hsm`: the label of the token that wraps the master key. */
  hsm_token?: string;
  embedded_chain: boolean;
}

const stamp = () =>
  new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
const pgRestoreCommand = (dir: string) => `pg_restore --clean --if-exists --no-owner --dbname "$DATABASE_URL" ${path.join(dir, PG_DUMP_NAME)}`;
const pgDumpCommand = (dir: string) => `pg_dump --format=custom --file ${path.join(dir, PG_DUMP_NAME)} "$DATABASE_URL"`;
const isPostgres = (config: Config) => !!config.databaseUrl && /^postgres(ql)?:\/\//.test(config.databaseUrl);

// Long: the steps of a backup (lock, copy, dump, manifest, notes) read in the order they run.
export async function backup(config: Config, o: { out?: string }): Promise<Output> {
  const out = path.resolve(o.out ?? `mintworks-backup-${stamp()}`);
  if (fs.existsSync(out) && fs.readdirSync(out).length > 0) throw new UsageError(`--out ${out} exists and is not empty: name a new directory`);
  const data = config.dataDir;
  const pg = isPostgres(config);
  const dbFile = pg ? null : sqliteFile(config.databaseUrl, data);
  if (dbFile && !fs.existsSync(dbFile)) throw new UsageError(`no database at ${dbFile}: is DATA_DIR (or DATABASE_URL) the service's?`);
  fs.mkdirSync(out, { recursive: true, mode: 0o700 });
  fs.chmodSync(out, 0o700);
  const contents: string[] = [];
  const notes: string[] = [];

  // 1. The chain first (see the top of this file).
  const embedded = !config.chainRpcUrl;
  if (embedded && (await copyChainState(data, path.join(out, 'chain.json')))) contents.push('chain.json');

  // 2. The database.
  if (dbFile) {
    const db = new SQLite(dbFile, { readonly: true, fileMustExist: true });
    try {
      await db.backup(path.join(out, SQLITE_NAME));
    } finally {
      db.close();
    }
    contents.push(SQLITE_NAME);
  } else {
    const r = spawnSync('pg_dump', ['--format=custom', '--file', path.join(out, PG_DUMP_NAME), config.database.directUrl ?? config.databaseUrl!], {
      encoding: 'utf8',
      // libpq reads sslmode and sslrootcert from the URL itself; DATABASE_CA_FILE is handed over as its PGSSLROOTCERT.
      env: config.database.caFile ? { ...process.env, PGSSLROOTCERT: config.database.caFile } : process.env,
    });
    if (r.error || r.status !== 0) {
      notes.push(
        `The PostgreSQL database is NOT in this backup (pg_dump ${r.error ? 'is not installed' : `failed: ${r.stderr.trim()}`}). ` +
          `Dump it right after this, with the service's DATABASE_URL:\n  ${pgDumpCommand(out)}`,
      );
    } else contents.push(PG_DUMP_NAME);
  }

  // 3. Content the database points at, and the keys.
  for (const d of CONTENT_DIRS) {
    if (!fs.existsSync(path.join(data, d))) continue;
    fs.cpSync(path.join(data, d), path.join(out, d), { recursive: true });
    contents.push(`${d}/`);
  }
  for (const f of [...keyFiles(config), ...(await demoFilesOf(config, dbFile))]) {
    if (!fs.existsSync(path.join(data, f))) continue;
    fs.copyFileSync(path.join(data, f), path.join(out, f));
    contents.push(f);
  }
  const hsm = config.keyCustody === 'pkcs11';
  const masterKey = hsm ? 'hsm' : contents.includes('master.key') && !config.masterKeyHex ? 'master.key' : 'MASTER_KEY';
  if (masterKey === 'MASTER_KEY') notes.push('The master key is not in this backup (it comes from MASTER_KEY): a restore needs the same MASTER_KEY.');
  if (hsm)
    notes.push(
      `This backup holds only sealed material: its master key is wrapped by the HSM token "${config.pkcs11?.tokenLabel}". Without that token (or the HSM vendor's backup of its keys) it opens nothing, by design.`,
    );
  if (config.operatorToken) notes.push('The operator token is not in this backup (it comes from OPERATOR_TOKEN).');
  if (!embedded) notes.push("The chain is external (CHAIN_RPC_URL): its state is the chain's own, not in this backup.");

  const manifest: Manifest = {
    format: FORMAT,
    created_at: new Date().toISOString(),
    chain_id: config.chains[0].id,
    database: pg ? 'postgres' : 'sqlite',
    contents,
    master_key: masterKey,
    ...(hsm ? { hsm_token: config.pkcs11?.tokenLabel } : {}),
    embedded_chain: embedded,
  };
  fs.writeFileSync(path.join(out, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  ownerOnly(out);
  const text = [
    `Backup written to ${out}:`,
    ...contents.map((c) => `  ${c}`),
    ...notes.map((n) => `\n${n}`),
    hsm
      ? '\nIt holds the sealed wallet seed and secrets: whoever reads it and can use the HSM token controls every wallet. Keep it off this machine.'
      : `\nIt holds ${masterKey === 'master.key' ? 'the master key and ' : ''}the API secrets: whoever reads it ${masterKey === 'master.key' ? 'controls every wallet' : 'and has MASTER_KEY controls every wallet'}. Keep it encrypted and off this machine.`,
  ].join('\n');
  return { json: { directory: out, ...manifest, notes }, text };
}

// Long: every check runs before anything is overwritten, then the copy: in the order they must run.
export async function restore(config: Config, o: { from: string; force?: boolean }): Promise<Output> {
  const from = path.resolve(o.from);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(from, MANIFEST), 'utf8'));
  } catch {
    throw new UsageError(`--from ${from} is not a Mintworks backup (no readable ${MANIFEST})`);
  }
  if (manifest.format !== FORMAT) throw new UsageError(`--from ${from}: backup format ${manifest.format} is not one this version reads (${FORMAT})`);
  if (manifest.chain_id !== config.chains[0].id) throw new UsageError(`the backup is of chain ${manifest.chain_id}, but CHAIN_ID is ${config.chains[0].id}`);
  const pg = isPostgres(config);
  if ((manifest.database === 'postgres') !== pg) {
    throw new UsageError(
      `the backup holds a ${manifest.database} database, but DATABASE_URL points at ${pg ? 'PostgreSQL' : 'SQLite'}: restore with the same kind of store`,
    );
  }
  if (manifest.master_key === 'MASTER_KEY' && !config.masterKeyHex)
    throw new UsageError('the backup has no master.key: set MASTER_KEY to the key the installation used, then restore again');
  if (manifest.master_key === 'hsm' && config.keyCustody !== 'pkcs11') {
    throw new UsageError(
      `the backup's master key is wrapped by the HSM token "${manifest.hsm_token}": a backup without the HSM is useless by design. Restore with KEY_CUSTODY=pkcs11 and the PKCS11_* settings of that token`,
    );
  }
  const data = config.dataDir;
  // Held until this command exits: no service may start on the DATA_DIR while it is being restored.
  if (fs.existsSync(data)) await lockDataDir(data, 'exclusive');
  const pid = runningAnvilPid(data);
  if (pid) throw new UsageError(`the service is running on DATA_DIR ${data} (its embedded chain is pid ${pid}): stop it first`);

  const dbFile = pg ? null : sqliteFile(config.databaseUrl, data);
  const targets = [
    ...(dbFile ? [dbFile] : []),
    ...manifest.contents.filter((c) => c !== SQLITE_NAME && c !== PG_DUMP_NAME).map((c) => path.join(data, c.replace(/\/$/, ''))),
    path.join(data, 'chain.json.bak'),
  ];
  const existing = targets.filter((t) => fs.existsSync(t));
  let aside: string | null = null;
  if (existing.length) {
    if (!o.force)
      throw new UsageError(
        `DATA_DIR ${data} is not empty (${existing.map((e) => path.relative(data, e) || e).join(', ')}): restore into a new DATA_DIR, or add --force to move what is there aside`,
      );
    aside = path.join(data, `pre-restore-${stamp()}`);
    fs.mkdirSync(aside, { recursive: true, mode: 0o700 });
    for (const t of existing) fs.renameSync(t, path.join(aside, path.basename(t)));
    for (const suffix of ['-wal', '-shm'])
      if (dbFile && fs.existsSync(dbFile + suffix)) fs.renameSync(dbFile + suffix, path.join(aside, path.basename(dbFile + suffix)));
  }
  fs.mkdirSync(data, { recursive: true, mode: 0o700 });
  const restored: string[] = [];
  for (const c of manifest.contents) {
    const src = path.join(from, c.replace(/\/$/, ''));
    if (c === PG_DUMP_NAME) continue;
    const dest = c === SQLITE_NAME ? dbFile! : path.join(data, c.replace(/\/$/, ''));
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.cpSync(src, dest, { recursive: true });
    ownerOnly(dest);
    restored.push(c);
  }
  const notes: string[] = [];
  if (aside) notes.push(`What DATA_DIR held before was moved to ${aside}.`);
  if (manifest.master_key === 'hsm')
    notes.push(`The restored data opens only with the HSM token "${manifest.hsm_token}" (its wrapping key): without it, this backup is useless by design.`);
  if (manifest.database === 'postgres') {
    notes.push(
      manifest.contents.includes(PG_DUMP_NAME)
        ? `Now restore the database into an empty PostgreSQL database (DATABASE_URL), then start the service:\n  ${pgRestoreCommand(from)}`
        : 'This backup holds no database dump: restore the pg_dump taken with it, then start the service.',
    );
  } else notes.push('Start the service: it migrates the database if this version is newer, and re-sends any transaction the chain state is missing.');
  return {
    json: { directory: from, data_dir: data, restored, moved_aside: aside, notes },
    text: [`Restored from ${from} into ${data}:`, ...restored.map((r) => `  ${r}`), ...notes.map((n) => `\n${n}`)].join('\n'),
  };
}

/**
 * Files 0600 and directories 0700, all the way down: a backup holds the database (API secrets) and
 * the keys, and the files it is made of are written with the process's umask (SQLite's backup,
 * pg_dump, copies).
 */
function ownerOnly(p: string): void {
  const st = fs.lstatSync(p);
  if (st.isSymbolicLink()) return;
  if (st.isDirectory()) {
    fs.chmodSync(p, 0o700);
    for (const e of fs.readdirSync(p)) ownerOnly(path.join(p, e));
  } else fs.chmodSync(p, 0o600);
}
