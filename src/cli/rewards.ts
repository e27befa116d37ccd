// `mintworks reward …`, the shell twin of the reward routes of the management API:
//   reward create --app UID --name N --token-name T --token-symbol S --supply AMOUNT
//                 [--withdraw-receiver ADDR] [--description D] [--chain ID]             -> {uid}
//   reward withdraw --app UID --reward UID                                           -> the reward
//   reward list --app UID
// The commands only write the database (the reward and its job); the running service deploys the
// contract and sends the withdrawal, picking the jobs up by polling.
import { cliActor } from './keys.js';
import { recordAudit } from '../services/audit.js';
import type { Ctx } from '../services/context.js';
import { requireApp, table, type Output } from './args.js';
import { ApiError } from '../util/errors.js';
import { createReward, listRewards, requestWithdraw, type NewReward } from '../services/rewards/index.js';

/** ApiError details (e.g. a validation error per field) as one line each, fields named as the flags. */
const explain = (err: ApiError) => err.details.map((d) => (d.field_name ? `--${d.field_name.replace(/_/g, '-')}: ${d.message}` : d.message)).join('\n');

async function asFlags<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    // The service's validation errors name API fields; say them as the flags the user typed.
    if (err instanceof ApiError && err.type === 'validation_error') throw new ApiError(err.status, err.type, [{ code: 'invalid', message: explain(err) }]);
    throw err;
  }
}

export async function rewardCreate(
  ctx: Ctx,
  o: { app: string; name: string; tokenName: string; tokenSymbol: string; supply: string; withdrawReceiver?: string; description?: string; chain?: number },
): Promise<Output> {
  const app = await requireApp(ctx.db, o.app);
  // The shell hands us text: exactly the numeric-string form of an API amount.
  const input: NewReward = {
    name: o.name,
    token_name: o.tokenName,
    token_symbol: o.tokenSymbol,
    supply: o.supply,
    withdraw_receiver: o.withdrawReceiver ?? null,
    description: o.description ?? null,
    chain_id: o.chain ?? null,
  };
  const r = await asFlags(() => createReward(ctx, app, input));
  await recordAudit(ctx.db, cliActor(), {
    action: 'reward.created',
    app_uid: app,
    chain_id: input.chain_id ?? null,
    details: { reward: r.uid, supply: input.supply },
  });
  return { json: r, text: `Reward ${r.uid} created; the running service deploys its contract (status deploying -> deployed).` };
}

export async function rewardWithdraw(ctx: Ctx, o: { app: string; reward: string }): Promise<Output> {
  const app = await requireApp(ctx.db, o.app);
  const r = await asFlags(() => requestWithdraw(ctx, app, o.reward));
  await recordAudit(ctx.db, cliActor(), { action: 'reward.withdrawn', app_uid: app, details: { reward: o.reward } });
  return {
    json: r,
    text: `Withdrawal of reward ${r.uid} requested: the running service sends what it holds to ${r.withdraw_receiver} once pending allocations and claims are done.`,
  };
}

export async function rewardList(ctx: Ctx, o: { app: string }): Promise<Output> {
  const rewards = await listRewards(ctx, await requireApp(ctx.db, o.app));
  const text = table(
    rewards as unknown as Record<string, unknown>[],
    [
      ['uid', 'uid'],
      ['status', 'status'],
      ['token_symbol', 'symbol'],
      ['supply', 'supply'],
      ['unallocated', 'unallocated'],
      ['withdraw_status', 'withdraw'],
      ['name', 'name'],
    ],
    '(no rewards)',
  );
  return { json: { rewards }, text };
}
