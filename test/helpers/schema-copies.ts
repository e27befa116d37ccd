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

/** Migrated once per chain id (migrations record the chain existing rows belong to). */
const sqliteSchemas = new Map<number, Promise<string>>();

/** A new data directory whose SQLite database holds the latest schema (`defaultChainId` as migrateToLatest's). */
export async function migratedSqliteDir(defaultChainId = 31337): Promise<string> {
  let schema = sqliteSchemas.get(defaultChainId);
  if (!schema) {
    schema = (async () => {
      const dir = tempDir('mintworks-schema-');
      const store = openStore({ dataDir: dir });
      await migrateToLatest(store, defaultChainId);
      await store.close(); // the last connection's close folds the WAL into the file
      const file = path.join(dir, SQLITE_FILE);
      if (fs.existsSync(`${file}-wal`)) throw new Error(`${file}-wal is left after close: the copy would miss what it holds`);
      return file;
    })();
    sqliteSchemas.set(defaultChainId, schema);
  }
  const file = await schema;
  const dir = tempDir();
  fs.copyFileSync(file, path.join(dir, SQLITE_FILE));
  return dir;
}

const pgSchemas = new Map<number, Promise<string>>();
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
    const names = [...pgSchemas.keys()].map((chain) => `mw_schema_${process.pid}_${chain}`);
    if (names.length === 0) return;
    // Synchronously: nothing asynchronous runs once the process exits.
    const pgModule = createRequire(import.meta.url).resolve('pg');
    const script = `const pg=require(${JSON.stringify(pgModule)});(async()=>{const c=new pg.Client({connectionString:${JSON.stringify(`${PG_BASE}/postgres`)}});await c.connect();for(const n of ${JSON.stringify(names)})await c.query('drop database if exists '+n+' with (force)');await c.end()})()`;
    spawnSync(process.execPath, ['-e', script], { stdio: 'ignore', timeout: 10_000 });
  });
}

/** A new PostgreSQL database holding the latest schema (`defaultChainId` as migrateToLatest's); returns its URL and a drop function. */
export async function migratedPostgres(defaultChainId = 31337): Promise<{ url: string; drop(): Promise<void> }> {
  let schema = pgSchemas.get(defaultChainId);
  if (!schema) {
    if (pgSchemas.size === 0) dropAtExit();
    schema = (async () => {
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
    })();
    pgSchemas.set(defaultChainId, schema);
  }
  const template = await schema;
  const name = `mw_test_${process.pid}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  await withPgAdmin((c) => c.query(`create database ${name} template ${template}`));
  return {
    url: `${PG_BASE}/${name}`,
    drop: () => withPgAdmin(async (c) => void (await c.query(`drop database if exists ${name} with (force)`))),
  };
}
