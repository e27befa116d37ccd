// POST /asset/batch: up to 100 creates in one request, each checked and accepted on its own, answered
// per item in order ({uid} or {error: {code, message}}). The accepted items go through the checks,
// rows and first jobs of POST /asset (writeCreates, create.ts), in ONE transaction that also stores the
// batch's Idempotency-Key answer: the batch and its answer commit together, so a retry after a crash or
// a lost answer replays it and never creates an item twice (nor would the items' asset_external_ids
// allow it). A bad item never stops the others.
import type { Ctx } from '../context.js';
import { commitOf, isUniqueViolation } from '../../store/db.js';
import { ApiError } from '../../util/errors.js';
import { newUid, restartUidRun } from '../../util/ids.js';
import { isUidTaken, MAX_UID_ROUNDS } from '../uids.js';
import { assertImageUrlFetchable } from '../../metadata/prepare.js';
import { WALLET_JOB } from '../../jobs/kinds.js';
import { writeTurns } from '../../store/write-turns.js';
import { saveAnswer, type IdempotentWrite } from '../requests/idempotency.js';
import type { AppEnvironment } from '../../domain/environment.js';
import { writeCreates, type AssetParams, type CreateRequest, type Outcome } from './create.js';

/** The most items of one batch (docs/api.md). */
export const MAX_BATCH = 100;

/** One item's refusal, as the batch answers it. */
interface ItemError {
  error: { code: string; message: string };
}
type BatchItem = { uid: string } | ItemError;

/** How often a batch is written again after a race another request won (the checks then see its rows). */
const MAX_RACE_ROUNDS = 3;

/** The first detail of an API error, as an item's error. */
function itemError(err: ApiError): ItemError {
  const d = err.details[0];
  return { error: { code: d?.code ?? 'invalid', message: d?.message ?? 'Invalid item.' } };
}

/**
 * `items`: each one's parameters, or the error its validation found already (the route's schema). Returns
 * the answer's `data`, one entry per item in order, once the accepted items are durable.
 */
export async function createAssetBatch(
  ctx: Ctx,
  appUid: string,
  environment: AppEnvironment,
  items: (AssetParams | ItemError)[],
  idem?: IdempotentWrite,
): Promise<BatchItem[]> {
  const answers: (BatchItem | null)[] = [];
  const requests: { index: number; r: CreateRequest }[] = [];
  for (const [index, item] of items.entries()) {
    const refused = 'error' in item ? item : await imageRefusal(ctx, item);
    answers.push(refused);
    if (!refused) requests.push({ index, r: { appUid, environment, params: item as AssetParams, uid: newUid() } });
  }
  const outcomes = await writeBatch(ctx, requests, answers, idem);
  const kinds = new Set<string>();
  for (const o of outcomes) {
    if (!o.ok) continue;
    kinds.add(o.firstJob);
    if (o.walletQueued) kinds.add(WALLET_JOB);
  }
  kinds.forEach((k) => ctx.queue.notify(k));
  return answers as BatchItem[];
}

/** What POST /asset refuses before writing (an image URL the outbound guard forbids), as an item error. */
async function imageRefusal(ctx: Ctx, p: AssetParams): Promise<ItemError | null> {
  if (!p.data.store_image_on_ipfs) return null;
  try {
    await assertImageUrlFetchable(ctx, p.data.image_url);
    return null;
  } catch (err) {
    if (err instanceof ApiError) return itemError(err);
    throw err;
  }
}

/** Writes the accepted items and the batch's answer in one transaction; fills `answers` in. */
async function writeBatch(
  ctx: Ctx,
  requests: { index: number; r: CreateRequest }[],
  answers: (BatchItem | null)[],
  idem: IdempotentWrite | undefined,
  round = 0,
): Promise<Outcome[]> {
  try {
    const { result, durable } = await commitOf(ctx)(async (tx) => {
      const outcomes = requests.length
        ? await writeCreates(
            ctx,
            tx,
            requests.map((q) => q.r),
          )
        : [];
      outcomes.forEach((o, k) => {
        const { index, r } = requests[k];
        if (o.ok) answers[index] = { uid: r.uid };
        else if (o.error instanceof ApiError) answers[index] = itemError(o.error);
        else throw o.error; // IdempotencyConflict: the route answers as the first request was answered
      });
      await saveAnswer(tx, idem, answers);
      return outcomes;
    });
    writeTurns().createsCommitted(requests.length);
    await durable;
    return result;
  } catch (err) {
    // A new uid another asset already has: new uids, again.
    if (isUidTaken(err, 'assets') && round < MAX_UID_ROUNDS) {
      restartUidRun();
      for (const q of requests) q.r.uid = newUid();
      return writeBatch(ctx, requests, answers, idem, round + 1);
    }
    // Another request took an external id or a unique name meanwhile: the checks, again, see it now.
    if (isUniqueViolation(err) && !isUidTaken(err, 'assets') && round < MAX_RACE_ROUNDS) return writeBatch(ctx, requests, answers, idem, round + 1);
    throw err;
  }
}
