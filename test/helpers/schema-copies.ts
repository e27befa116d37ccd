// New databases that hold the latest schema, copied from one migrated once per test process: running
// every migration costs about 0.2 s on SQLite (each migration's commit flushed) and 0.5 s on PostgreSQL,
// where a copy costs a file copy, or a `create database … template` that costs no more than an empty
// database. The copies are the migrations' own result; a test of a migration builds its database itself.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { isAlive } from '../../src/chain/anvil/processes.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { PG_BASE, tempDir, withPgAdmin } from './env.js';

const SQLITE_FILE = 'mintworks.sqlite';
/** The chain id whose schemas a runner may migrate for all its test processes (writeSharedSchemas). */
const SHARED_CHAIN_ID = 31337;
/** Names the file a runner writes its shared schemas to (writeSharedSchemas), once they are migrated. */
export const SHARED_SCHEMAS_ENV = 'MINTWORKS_TEST_SCHEMAS';
/** How long a test process waits for its runner's schemas before it fails. */
const SHARED_WAIT_MS = 180_000;
type SharedSchemas = { sqlite?: string; postgres?: string; error?: string };
let shared: Promise<SharedSchemas> | undefined;

/** The runner's schemas of the default chain, once it has written them; none without a runner. */
function sharedSchema(kind: 'sqlite' | 'postgres', defaultChainId: number): Promise<string | undefined> {
  const file = process.env[SHARED_SCHEMAS_ENV];
  if (!file || defaultChainId !== SHARED_CHAIN_ID) return Promise.resolve(undefined);
  shared ??= readWhenWritten(file).then((text) => JSON.parse(text) as SharedSchemas);
  return shared.then((s) => s[kind]);
}

/** The file's text once it exists (the runner renames it into place whole). */
function readWhenWritten(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (err: Error | null, text?: string) => {
      if (done) return;
      done = true;
      watcher.close();
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(text!);
    };
    const tryRead = () => {
      try {
        finish(null, fs.readFileSync(file, 'utf8'));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') finish(err as Error);
      }
    };
    // Watching before the first look: a rename after it is seen, whenever it comes.
    const watcher = fs.watch(path.dirname(file), tryRead);
    const timer = setTimeout(() => finish(new Error(`the test runner did not write ${file} within ${SHARED_WAIT_MS / 1000} s`)), SHARED_WAIT_MS);
    tryRead();
  });
}

/** Migrated once per chain id (migrations record the chain existing rows belong to). */
const sqliteSchemas = new Map<number, Promise<string>>();

/** A new data directory whose SQLite database holds the latest schema (`defaultChainId` as migrateToLatest's). */
export async function migratedSqliteDir(defaultChainId = 31337): Promise<string> {
  let schema = sqliteSchemas.get(defaultChainId);
  if (!schema) {
    schema = sharedSchema('sqlite', defaultChainId).then((file) => file ?? migrateSqliteSchema(defaultChainId));
    sqliteSchemas.set(defaultChainId, schema);
  }
  const file = await schema;
  const dir = tempDir();
  fs.copyFileSync(file, path.join(dir, SQLITE_FILE));
  return dir;
}

async function migrateSqliteSchema(defaultChainId: number): Promise<string> {
  const dir = tempDir('mintworks-schema-');
  const store = openStore({ dataDir: dir });
  await migrateToLatest(store, defaultChainId);
  await store.close(); // the last connection's close folds the WAL into the file
  const file = path.join(dir, SQLITE_FILE);
  if (fs.existsSync(`${file}-wal`)) throw new Error(`${file}-wal is left after close: the copy would miss what it holds`);
  return file;
}

const pgSchemas = new Map<number, Promise<string>>();
/** The chain ids of the schema databases this process made (and drops as it exits). */
const ownPgSchemas = new Set<number>();
const SCHEMA_DB = /^mw_schema_(\d+)_\d+$/;

/** The schema databases of test processes that are gone (killed before they could drop theirs). */
async function dropOrphans(c: pg.Client): Promise<void> {
  const { rows } = await c.query<{ datname: string }>("select datname from pg_database where datname like 'mw\\_schema\\_%'");
  for (const { datname } of rows) {
    const pid = Number(SCHEMA_DB.exec(datname)?.[1]);
    if (!pid || pid === process.pid || isAlive(pid)) continue;
    await c.query(`drop database if exists ${datname} with (force)`);
  }
}

/** This process's schema databases, dropped as it exits (they must not outlive it; dropOrphans takes those of a killed one). */
function dropAtExit(): void {
  process.once('exit', () => {
    const names = [...ownPgSchemas].map((chain) => `mw_schema_${process.pid}_${chain}`);
    if (names.length === 0) return;
    // Synchronously: nothing asynchronous runs once the process exits.
    const pgModule = createRequire(import.meta.url).resolve('pg');
    const script = `const pg=require(${JSON.stringify(pgModule)});(async()=>{const c=new pg.Client({connectionString:${JSON.stringify(`${PG_BASE}/postgres`)}});await c.connect();for(const n of ${JSON.stringify(names)})await c.query('drop database if exists '+n+' with (force)');await c.end()})()`;
    spawnSync(process.execPath, ['-e', script], { stdio: 'ignore', timeout: 10_000 });
  });
}

/** The database holding the latest schema (`defaultChainId` as migrateToLatest's) that copies are made from. */
function pgSchema(defaultChainId: number): Promise<string> {
  let schema = pgSchemas.get(defaultChainId);
  if (!schema) {
    schema = sharedSchema('postgres', defaultChainId).then((name) => name ?? migratePgSchema(defaultChainId));
    pgSchemas.set(defaultChainId, schema);
  }
  return schema;
}

async function migratePgSchema(defaultChainId: number): Promise<string> {
  if (ownPgSchemas.size === 0) dropAtExit();
  ownPgSchemas.add(defaultChainId);
  const name = `mw_schema_${process.pid}_${defaultChainId}`;
  await withPgAdmin(async (c) => {
    await dropOrphans(c);
    await c.query(`drop database if exists ${name} with (force)`);
    await c.query(`create database ${name}`);
  });
  const store = openStore({ databaseUrl: `${PG_BASE}/${name}`, dataDir: tempDir() });
  await migrateToLatest(store, defaultChainId);
  await store.close(); // a template is copied only while nobody is connected to it
  return name;
}

/** A new PostgreSQL database holding the latest schema (`defaultChainId` as migrateToLatest's); returns its URL and a drop function. */
export async function migratedPostgres(defaultChainId = 31337): Promise<{ url: string; drop(): Promise<void> }> {
  const template = await pgSchema(defaultChainId);
  const name = `mw_test_${process.pid}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  await withPgAdmin((c) => c.query(`create database ${name} template ${template}`));
  return {
    url: `${PG_BASE}/${name}`,
    drop: () => withPgAdmin(async (c) => void (await c.query(`drop database if exists ${name} with (force)`))),
  };
}

/**
 * For a test runner: migrates the schemas of the default chain once and writes where they are to `file`
 * (the test processes it starts, with `file` in SHARED_SCHEMAS_ENV, copy these instead of each migrating
 * its own: about a second each on PostgreSQL). The processes wait for the file; a failure is written
 * too, and they migrate their own. The schemas live as long as this process.
 */
export async function writeSharedSchemas(file: string): Promise<void> {
  let schemas: SharedSchemas;
  try {
    const [sqlite, postgres] = await Promise.all([migrateSqliteSchema(SHARED_CHAIN_ID), pgSchema(SHARED_CHAIN_ID)]);
    schemas = { sqlite, postgres };
  } catch (err) {
    schemas = { error: String(err) };
  }
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(schemas));
  fs.renameSync(`${file}.tmp`, file);
}
