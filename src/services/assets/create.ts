// POST /asset: creates run in groups. Each request still gets its own answer, given only after the
// transaction holding its asset and mint job has committed, but the requests that arrive together share
// that transaction: one commit (one fsync on SQLite, one round trip on PostgreSQL), one query per table
// for the checks, one token id range per collection and multi-row inserts. Under load the cost of a
// create is then a few rows, not a transaction.
import type { Ctx } from '../context.js';
import type { DbOrTx, Tx } from '../../store/db.js';
import { commitOf, isUniqueViolation } from '../../store/db.js';
import { insertRowsTogether } from '../../store/inserts.js';
import { writeTurns } from '../../store/write-turns.js';
import { ApiError } from '../../util/errors.js';
import { newUid, restartUidRun } from '../../util/ids.js';
import { Groups } from '../../util/groups.js';
import { isUidTaken, MAX_UID_ROUNDS } from '../uids.js';
import { nowIso } from '../../util/time.js';
import { walletJobs, walletsToQueue, type WalletWanted } from '../users/wallets.js';
import { buildMetadata, displayName, type AssetData } from '../../domain/assets.js';
import { assertImageUrlFetchable, needsPreparation, PREPARE_ATTEMPTS } from '../../metadata/prepare.js';
import { queueOn, type AnyEnqueueOptions } from '../../jobs/queue.js';
import { findAnswer, IdempotencyConflict, saveAnswers, type IdempotentWrite } from '../requests/idempotency.js';

import { kindOn, MINT_JOB, PREPARE_JOB, WALLET_JOB } from '../../jobs/kinds.js';
import type { AppEnvironment } from '../../domain/environment.js';
import { nameKey, nameSpellings } from '../../domain/text.js';
import { readGroupFacts, tokenIdsOf } from './create-facts.js';

export interface AssetParams {
  user_uid: string;
  collection_uid: string;
  asset_external_id: string;
  sale_price_in_usd?: number | null;
  data: AssetData & { store_image_on_ipfs: boolean };
}

/** Columns of a new asset row with nothing in flight: not burned, no transfer, burn or edit running. */
export const NO_ACTIONS = { mint_error: null, mint_tx_id: null, is_burned: 0, is_transferring: 0, is_editing: 0, is_burning: 0, pending_edit: null } as const;

const nameTaken = () => ApiError.of('asset_name_exists');
const externalIdTaken = () => ApiError.of('asset_external_id_exists');

/** Most creates in one transaction (bounded by the databases' limits on bound parameters per statement). */
const MAX_GROUP = 400;

/** A create as writeCreates checks and writes it (one of a group, or an item of a batch). */
export interface CreateRequest {
  appUid: string;
  environment: AppEnvironment;
  params: AssetParams;
  /** Fixed when the request arrives; drawn again only if the write finds it taken. */
  uid: string;
  idem?: IdempotentWrite;
}

interface Request extends CreateRequest {
  resolve(r: { uid: string }): void;
  reject(err: unknown): void;
}

export type Outcome = { ok: true; firstJob: string; walletQueued: boolean } | { ok: false; error: ApiError | IdempotencyConflict };
// `firstJob` is the job kind to announce: chain job kinds are already those of the collection's chain.

export async function createAsset(
  ctx: Ctx,
  appUid: string,
  environment: AppEnvironment,
  params: AssetParams,
  idem?: IdempotentWrite,
): Promise<{ uid: string }> {
  // The worker fetches the image; what is refused already now (scheme, forbidden address) is a 400.
  if (params.data.store_image_on_ipfs) await assertImageUrlFetchable(ctx, params.data.image_url);
  return writerOf(ctx).submit(appUid, environment, params, idem);
}

/** Where creates are written: an AssetIntake on this thread, or one in another thread (src/boot/threads/creates-thread.ts). */
export interface CreatesWriter {
  submit(appUid: string, environment: AppEnvironment, params: AssetParams, idem?: IdempotentWrite): Promise<{ uid: string }>;
}

const writers = new WeakMap<Ctx, CreatesWriter>();
function writerOf(ctx: Ctx): CreatesWriter {
  let w = writers.get(ctx);
  if (!w) writers.set(ctx, (w = new AssetIntake(ctx)));
  return w;
}

/** From now on the creates of `ctx` are written by `writer` (the creates' thread of the service). */
export function writeCreatesWith(ctx: Ctx, writer: CreatesWriter): void {
  writers.set(ctx, writer);
}

/**
 * Collects the creates that arrive while a group is being written and writes them as the next group.
 * A lone request under no load is written at once (after the current event-loop turn), so grouping
 * adds no latency; under load, groups grow by themselves to the number of requests in flight.
 */
export class AssetIntake implements CreatesWriter {
  private readonly groups = new Groups<Request>(MAX_GROUP, (group) => this.writeGroup(group));

  /**
   * `uids`: where new uids come from (tests give a sequence that collides). `announce`: told the job
   * kinds a committed group enqueued (by default they wake this process's workers).
   */
  constructor(
    private readonly ctx: Ctx,
    private readonly uids: () => string = newUid,
    private readonly announce: (kinds: Set<string>) => void = (kinds) => kinds.forEach((k) => ctx.queue.notify(k)),
  ) {}

  submit(appUid: string, environment: AppEnvironment, params: AssetParams, idem?: IdempotentWrite): Promise<{ uid: string }> {
    return new Promise((resolve, reject) => this.groups.add({ appUid, environment, params, uid: this.uids(), idem, resolve, reject }));
  }

  /** Writes a group; returns once it is committed, and answers its requests once that is durable. */
  private async writeGroup(group: Request[], uidRounds = 0): Promise<void> {
    let outcomes: Outcome[];
    let durable: Promise<void>;
    try {
      const commit = commitOf(this.ctx);
      ({ result: outcomes, durable } = await commit((tx) => writeCreates(this.ctx, tx, group)));
      writeTurns().createsCommitted(group.length); // a burst: the mints wait for it (store/write-turns.ts)
    } catch (err) {
      // A new uid another asset already has (services/uids.ts): new uids, again.
      if (isUidTaken(err, 'assets') && uidRounds < MAX_UID_ROUNDS) {
        restartUidRun();
        for (const r of group) r.uid = this.uids();
        return this.writeGroup(group, uidRounds + 1);
      }
      if (group.length === 1) {
        group[0].reject(await answeredFirst(this.ctx.db, group[0], translate(err)));
        return;
      }
      // A race the checks could not see (e.g. the same external id from another process): each
      // request on its own, so only the one concerned fails.
      for (const r of group) await this.writeGroup([r]);
      return;
    }
    durable.then(
      () => this.answer(group, outcomes),
      (err) => group.forEach((r) => r.reject(err)),
    );
  }

  private answer(group: Request[], outcomes: Outcome[]): void {
    const kinds = new Set<string>();
    outcomes.forEach((o, i) => {
      if (!o.ok) return group[i].reject(o.error);
      kinds.add(o.firstJob);
      if (o.walletQueued) kinds.add(WALLET_JOB);
      group[i].resolve({ uid: group[i].uid });
    });
    if (kinds.size) this.announce(kinds);
  }
}

/**
 * A create refused because its asset_external_id is taken, whose Idempotency-Key has an answer stored
 * meanwhile: the same request was answered first (by another process, or while this one waited for
 * its group). That answer is this one's too (the route replays it, or answers 422 for another body),
 * not a 400 saying the asset it created exists.
 */
async function answeredFirst<E>(db: DbOrTx, r: CreateRequest, error: E): Promise<E | IdempotencyConflict> {
  if (!r.idem || !(error instanceof ApiError) || error.details[0]?.code !== 'asset_external_id_exists') return error;
  return (await findAnswer(db, r.idem.appUid, r.idem.key, r.idem.now)) ? new IdempotencyConflict() : error;
}

function translate(err: unknown): unknown {
  if (isUniqueViolation(err, 'unique_name_key')) return nameTaken();
  if (isUniqueViolation(err, 'asset_external_id')) return externalIdTaken();
  return err;
}

/**
 * Writes a group of creates in `tx`: every check of a single create, in the same order (user, then
 * collection, then external id, then name), answered per request; the accepted ones get their token ids
 * (fixed now, so a replayed mint reverts on chain instead of minting twice), rows and first jobs.
 * Long: every check of a create, in the order a single create makes them, over one group's facts.
 */
export async function writeCreates(ctx: Ctx, tx: Tx, group: CreateRequest[]): Promise<Outcome[]> {
  const { users, collections, takenIds, wallets, reserved } = await readGroupFacts(tx, group);
  const userOf = new Map(users.map((u) => [u.uid, u]));
  const collectionOf = new Map(collections.map((c) => [c.uid, c]));
  // The user's wallet on a chain, by `user uid @ chain id`.
  const walletOn = new Map(wallets.map((w) => [`${w.user_uid}@${w.chain_id}`, w.address]));

  const outcomes: (Outcome | null)[] = [];
  const accepted: number[] = [];
  const namesTaken = new Set<string>(); // collection + name claimed earlier in this group
  for (const [i, r] of group.entries()) {
    const error = await answeredFirst(tx, r, await check(tx, r, userOf, collectionOf, takenIds, namesTaken));
    outcomes.push(error ? { ok: false, error } : null);
    if (!error) accepted.push(i);
  }
  // Also when none was accepted: ids the facts reserved (PostgreSQL) go back to their counters.
  const tokenIds = await tokenIdsOf(
    tx,
    accepted.map((i) => group[i].params.collection_uid),
    reserved,
  );
  if (accepted.length === 0) return outcomes as Outcome[];
  const t = nowIso();
  const rows = [];
  const jobs = new Map<number, AnyEnqueueOptions[]>(); // by chain: a chain's work has its own job kinds
  // The users' wallets to create (the first mint on a chain creates it), with the creates that ask.
  const walletsWanted = new Map<string, { want: WalletWanted; creates: { walletQueued: boolean }[] }>();
  for (const [k, i] of accepted.entries()) {
    const { params, uid, appUid, environment } = group[i];
    const tokenId = tokenIds[k];
    const name = displayName(params.data.name, params.data.unique_name, tokenId);
    const user = userOf.get(params.user_uid)!;
    const chainId = Number(collectionOf.get(params.collection_uid)!.chain_id);
    const walletKey = `${user.uid}@${chainId}`;
    const walletAddress = walletOn.get(walletKey) ?? null;
    rows.push({
      uid,
      app_uid: appUid,
      collection_uid: params.collection_uid,
      asset_external_id: params.asset_external_id,
      mint_for_user_uid: params.user_uid,
      name,
      unique_name_key: params.data.unique_name ? nameKey(name) : null,
      token_id: tokenId,
      mint_status: 'pending' as const,
      ...NO_ACTIONS,
      owner_user_uid: null,
      owner_address: null,
      mint_for_address: walletAddress,
      token_uri: null,
      sale_price_in_usd: params.sale_price_in_usd == null ? null : String(params.sale_price_in_usd),
      metadata: JSON.stringify(buildMetadata(uid, name, params.data)),
      store_image: params.data.store_image_on_ipfs ? 1 : 0,
      created_at: t,
      updated_at: t,
    });
    // Stored images and production Apps' IPFS documents are prepared by a job before the mint job.
    const first: AnyEnqueueOptions = needsPreparation(environment, params.data.store_image_on_ipfs)
      ? { kind: PREPARE_JOB, ref: uid, groupKey: params.user_uid, maxAttempts: PREPARE_ATTEMPTS }
      : { kind: MINT_JOB, ref: uid, groupKey: params.user_uid, payload: { round: 1 } };
    if (!jobs.has(chainId)) jobs.set(chainId, []);
    jobs.get(chainId)!.push(first);
    const outcome = { ok: true as const, firstJob: kindOn(ctx, first.kind, chainId), walletQueued: false };
    outcomes[i] = outcome;
    if (!walletAddress) {
      const w = walletsWanted.get(walletKey) ?? { want: { userUid: user.uid, chainId }, creates: [] };
      w.creates.push(outcome);
      walletsWanted.set(walletKey, w);
    }
  }
  // Wallet jobs for the users without a wallet and without one under way: one query for the group,
  // and the jobs inserted with the assets.
  const { queue: walletsQueued } = await walletsToQueue(
    ctx,
    tx,
    [...walletsWanted.values()].map((w) => w.want),
  );
  for (const w of walletsQueued) for (const o of walletsWanted.get(`${w.userUid}@${w.chainId}`)!.creates) o.walletQueued = true;
  const walletRows = walletsQueued.length ? [{ table: 'jobs' as const, rows: ctx.queue.rowsOf(walletJobs(ctx, walletsQueued)) }] : [];
  // The assets and their first jobs in one statement on PostgreSQL, held to go out with the COMMIT: a
  // unique violation (a race the checks could not see) is then the commit's error, caught the same.
  await insertRowsTogether(
    tx,
    [
      { table: 'assets', rows },
      ...[...jobs].map(([chainId, ofChain]) => ({ table: 'jobs' as const, rows: queueOn(ctx, chainId).rowsOf(ofChain) })),
      ...walletRows,
    ],
    { held: true },
  );
  // Idempotency-Key answers of the accepted creates, in the same transaction (a clash rolls the group back).
  await saveAnswers(
    tx,
    accepted.flatMap((i) => (group[i].idem ? [{ w: group[i].idem!, data: { uid: group[i].uid } }] : [])),
  );
  return outcomes as Outcome[];
}

async function check(
  tx: Tx,
  r: CreateRequest,
  userOf: Map<string, { app_uid: string }>,
  collectionOf: Map<string, { app_uid: string }>,
  takenIds: Set<string>,
  namesTaken: Set<string>,
): Promise<ApiError | null> {
  const { params, appUid } = r;
  if (userOf.get(params.user_uid)?.app_uid !== appUid) return ApiError.notFound('User');
  if (collectionOf.get(params.collection_uid)?.app_uid !== appUid) return ApiError.notFound('Collection');
  const extKey = `${appUid}\n${params.asset_external_id}`;
  if (takenIds.has(extKey)) return externalIdTaken();
  if (params.data.unique_name) {
    const key = nameKey(params.data.name);
    const groupKey = `${params.collection_uid}\n${key}`;
    if (namesTaken.has(groupKey)) return nameTaken();
    const same = await tx
      .selectFrom('assets')
      .select('uid')
      .where('collection_uid', '=', params.collection_uid)
      .where((eb) => eb.or([eb('name', 'in', nameSpellings(params.data.name)), eb('unique_name_key', 'in', nameSpellings(key))]))
      .executeTakeFirst();
    if (same) return nameTaken();
    namesTaken.add(groupKey);
  }
  takenIds.add(extKey); // a second request with the same id in this group is a duplicate
  return null;
}
