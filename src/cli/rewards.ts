// `mintworks reward …` (issue 4), the shell twin of the reward routes of the management API:
//   reward create --app UID --name N --token-name T --token-symbol S --supply AMOUNT
//                 [--withdraw-receiver ADDR] [--description D]                       -> {uid}
//   reward withdraw --app UID --reward UID                                           -> the reward
//   reward list --app UID
// The commands only write the database (the reward and its job); the running service deploys the
// contract and sends the withdrawal, picking the jobs up by polling.
import type { Ctx } from '../services/context.js';
import { chainFlag, flag as flagOf, requireApp as requireAppOf, UsageError, type Flags } from './args.js';
import { ApiError } from '../util/errors.js';
import { createReward, listRewards, requestWithdraw } from '../services/rewards/index.js';

export const REWARD_USAGE = `  reward create --app UID --name N --token-name T --token-symbol S --supply AMOUNT
                [--withdraw-receiver ADDR] [--description D] [--chain ID]
                                                              create an ERC-20 reward (deployed by the service) -> {uid}
  reward withdraw --app UID --reward UID                      send what the reward still holds to its withdraw receiver
  reward list --app UID                                       rewards of an App, with budget and withdrawal state`;

const usage = (message: string) => new UsageError(`${message}\n\n${REWARD_USAGE}`);
const flag = (flags: Flags, name: string, required: boolean) => flagOf(flags, name, required, REWARD_USAGE);
const requireApp = (ctx: Ctx, flags: Flags) => requireAppOf(ctx.db, flags, REWARD_USAGE);

/** ApiError details (e.g. a validation error per field) as one line each. */
const explain = (err: ApiError) => err.details.map((d) => (d.field_name ? `--${d.field_name.replace(/_/g, '-')}: ${d.message}` : d.message)).join('\n');

export async function rewardCommand(ctx: Ctx, words: string[], flags: Flags): Promise<{ json: unknown; text: string }> {
  const sub = words[1];
  try {
    switch (sub) {
      case 'create': {
        const app = await requireApp(ctx, flags);
        const r = await createReward(ctx, app, {
          name: flag(flags, 'name', true)!,
          token_name: flag(flags, 'token-name', true)!,
          token_symbol: flag(flags, 'token-symbol', true)!,
          // The shell hands us text: exactly the numeric-string form of an API amount.
          supply: flag(flags, 'supply', true)!,
          withdraw_receiver: flag(flags, 'withdraw-receiver', false) ?? null,
          description: flag(flags, 'description', false) ?? null,
          chain_id: chainFlag(flags, REWARD_USAGE),
        });
        return { json: r, text: `Reward ${r.uid} created; the running service deploys its contract (status deploying -> deployed).` };
      }
      case 'withdraw': {
        const app = await requireApp(ctx, flags);
        const r = await requestWithdraw(ctx, app, flag(flags, 'reward', true)!);
        return { json: r, text: `Withdrawal of reward ${r.uid} requested: the running service sends what it holds to ${r.withdraw_receiver} once pending allocations and claims are done.` };
      }
      case 'list': {
        const rewards = await listRewards(ctx, await requireApp(ctx, flags));
        const line = (r: (typeof rewards)[number]) => `${r.uid}  ${r.status.padEnd(9)}  ${r.token_symbol.padEnd(8)}  supply ${r.supply}  unallocated ${r.unallocated}${r.withdraw_status ? `  withdraw ${r.withdraw_status}` : ''}  ${r.name}`;
        return { json: { rewards }, text: rewards.map(line).join('\n') || '(no rewards)' };
      }
      default:
        throw usage(sub ? `unknown command "reward ${sub}"` : 'reward needs a command');
    }
  } catch (err) {
    // The service's validation errors name API fields; say them as the flags the user typed.
    if (err instanceof ApiError && err.type === 'validation_error') throw new ApiError(err.status, err.type, [{ code: 'invalid', message: explain(err) }]);
    throw err;
  }
}
