// The create path alone: groups of POST /asset's creates written through AssetIntake (the checks, the
// rows, the jobs, the commit and the flush of the creates' thread), in this one process, with no HTTP,
// no threads and no chain. On a shared machine the HTTP benches swing by a third from one run to the
// next, and this path's CPU per create by about a tenth between a run's later rounds: the steadier
// measure of a change to the writes. One JSON line per database.
//   node --import tsx bench/creates.ts   (BENCH_DB=sqlite|postgres, BENCH_GROUP=32 creates a group,
//                                         BENCH_GROUPS=200 groups a round, BENCH_ROUNDS=5,
//                                         BENCH_EXT=random|ordered external ids)
// Per round: CPU µs a create (user and system: the process's, the flushes in the thread pool
// included) and wall µs a create; on SQLite the KB the process wrote to disk and the WAL frames a create
// (checkpoints are off while it runs, so the WAL holds every frame written), on PostgreSQL the
// server's CPU µs a create. The line gives each round and the medians, and on SQLite the last round's
// WAL frames a create by the B-tree (table or index) whose page each frame holds: what each index
// costs the commits.
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import SQLite from 'better-sqlite3';
import { loadConfig } from '../src/config/config.js';
import { openCore } from '../src/boot/open-core.js';
import { buildContext } from '../src/boot/context.js';
import { createApp } from '../src/services/apps/registry.js';
import { createCollection } from '../src/services/collections/collections.js';
import { createUser } from '../src/services/users/users.js';
import { AssetIntake, type AssetParams } from '../src/services/assets/create.js';
import { sqliteFile } from '../src/store/sqlite/open.js';
import { freshPostgres, tempDir } from '../test/helpers/env.js';
import { benchAssetBody, dbsFromArgs, emit, ioOf, postgresServerMs } from './lib.js';

const GROUP = Number(process.env.BENCH_GROUP ?? 32);
const GROUPS = Number(process.env.BENCH_GROUPS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ordered = process.env.BENCH_EXT === 'ordered';
const WARM_GROUPS = 100;

const WAL_HEADER = 32;
const WAL_FRAME_HEADER = 24;

/** Bytes of one frame of the WAL `wal` (its first bytes at least): a frame's header and a page, whose size is in the WAL's header (bytes 8-11). */
const walFrameBytes = (wal: Buffer): number => WAL_FRAME_HEADER + wal.readUInt32BE(8);

/** The WAL's header alone. */
function walHead(walFile: string): Buffer {
  const head = Buffer.alloc(WAL_HEADER);
  const fd = fs.openSync(walFile, 'r');
  try {
    fs.readSync(fd, head, 0, WAL_HEADER, 0);
  } finally {
    fs.closeSync(fd);
  }
  return head;
}

/**
 * WAL frames a create by B-tree, of the frames written from byte `from` of the WAL on: each frame's
 * page number (the first field of its header) looked up in dbstat. Pages that are no B-tree's now
 * (the freelist, new pages) count as `other`.
 */
function framesByBtree(file: string, from: number, creates: number): Record<string, number> {
  const wal = fs.readFileSync(`${file}-wal`);
  const frame = walFrameBytes(wal);
  const owner = new Map<number, string>();
  const db = new SQLite(file, { readonly: true });
  try {
    for (const r of db.prepare('select name, pageno, pagetype from dbstat').all() as { name: string; pageno: number; pagetype: string }[])
      owner.set(r.pageno, r.pagetype === 'leaf' ? r.name : `${r.name} (interior)`);
  } finally {
    db.close();
  }
  const counts = new Map<string, number>();
  for (let at = Math.max(from, WAL_HEADER); at + frame <= wal.length; at += frame) {
    const name = owner.get(wal.readUInt32BE(at)) ?? 'other';
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return Object.fromEntries([...counts].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Math.round((v / creates) * 1000) / 1000]));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round1 = (x: number) => Math.round(x * 10) / 10;

for (const db of dbsFromArgs()) {
  const dataDir = tempDir('mintworks-creates-');
  const pgdb = db === 'postgres' ? await freshPostgres() : null;
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...(pgdb ? { DATABASE_URL: pgdb.url } : {}) });
  const log = pino({ level: 'silent' });
  // No checkpoints: the WAL then holds every frame the creates wrote (counted per round below).
  const core = await openCore(config, log, { store: { checkpoints: 'none' } });
  try {
    const ctx = buildContext({ config, log, core });
    const app = await createApp(ctx, 'bench', 'development');
    const collection = await createCollection(ctx, app.uid, { name: 'Bench', symbol: 'BENCH' } as Parameters<typeof createCollection>[2]);
    const user = (await createUser(ctx, app.uid, {})) as { uid: string };
    // BENCH_USERS=new: each create for a user of its own who has no wallet yet (an airdrop to new users).
    const newUsers = process.env.BENCH_USERS === 'new';
    const fresh: string[] = [];
    if (newUsers) for (let i = 0; i < (WARM_GROUPS + GROUPS * ROUNDS) * GROUP; i++) fresh.push(((await createUser(ctx, app.uid, {})) as { uid: string }).uid);
    const intake = new AssetIntake(ctx);
    // External ids in no order, as the HTTP benches' 64 clients send them (each its own random prefix), or in order.
    let n = 0;
    const body = (): AssetParams => {
      const i = n++;
      const ext = ordered ? `bench-${String(i).padStart(10, '0')}` : `${randomBytes(16).toString('base64url')}-${i}`;
      return benchAssetBody(newUsers ? fresh[i] : user.uid, collection.uid, ext) as AssetParams;
    };
    const groups = async (count: number) => {
      for (let g = 0; g < count; g++) await Promise.all(Array.from({ length: GROUP }, () => intake.submit(app.uid, 'development', body())));
    };
    const file = sqliteFile(undefined, dataDir);
    const wal = `${file}-wal`;
    const walBytes = () => (db === 'sqlite' && fs.existsSync(wal) ? fs.statSync(wal).size : 0);

    await groups(WARM_GROUPS);
    const frame = db === 'sqlite' ? walFrameBytes(walHead(wal)) : 0;
    const rounds: { cpu_us: number; user_us: number; sys_us: number; wall_us: number; disk_kb?: number; wal_frames?: number; db_cpu_us?: number }[] = [];
    let lastRoundFrom = 0; // where the last round's frames start in the WAL
    for (let r = 0; r < ROUNDS; r++) {
      const [cpu0, t0, disk0, wal0, pg0] = [process.cpuUsage(), performance.now(), ioOf(process.pid).disk, walBytes(), pgdb ? postgresServerMs() : 0];
      lastRoundFrom = wal0;
      await groups(GROUPS);
      const cpu = process.cpuUsage(cpu0);
      const creates = GROUPS * GROUP;
      rounds.push({
        cpu_us: round1((cpu.user + cpu.system) / creates),
        user_us: round1(cpu.user / creates),
        sys_us: round1(cpu.system / creates),
        wall_us: round1(((performance.now() - t0) * 1000) / creates),
        ...(db === 'sqlite'
          ? {
              disk_kb: round1((ioOf(process.pid).disk - disk0) / 1024 / creates),
              wal_frames: Math.round(((walBytes() - wal0) / frame / creates) * 100) / 100,
            }
          : {}),
        ...(pgdb ? { db_cpu_us: round1(((postgresServerMs() - pg0) * 1000) / creates) } : {}),
      });
    }
    const byBtree = db === 'sqlite' ? framesByBtree(file, lastRoundFrom, GROUPS * GROUP) : undefined;
    const med = (k: keyof (typeof rounds)[number]) => median(rounds.map((x) => x[k] ?? 0));
    emit({
      bench: 'creates',
      db,
      group: GROUP,
      creates_per_round: GROUPS * GROUP,
      external_ids: ordered ? 'ordered' : 'random',
      cpu_us: med('cpu_us'),
      user_us: med('user_us'),
      sys_us: med('sys_us'),
      wall_us: med('wall_us'),
      ...(db === 'sqlite' ? { disk_kb: med('disk_kb'), wal_frames: med('wal_frames') } : { db_cpu_us: med('db_cpu_us') }),
      ...(byBtree ? { wal_frames_by_btree: byBtree } : {}),
      rounds,
    });
  } finally {
    await core.store.close();
    await pgdb?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
