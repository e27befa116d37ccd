// `mintworks chain …` operator tools, the shell twin of /admin/v1/chains (docs/chains-operations.md):
//   chain status [--chain ID]              head, base fee and ceiling, providers, relayers (balance, nonces, in flight)
//   chain txs [--stuck] [--chain ID]       transactions not confirmed yet, oldest first
//   chain cancel <tx>                      a 0-value self-transfer at its nonce takes its place
//   chain resync --chain ID                relayer nonces in line with the chain; dropped transactions sent again
// They read the database and talk to the chains' providers directly, beside a running service (whose
// tracker then follows what they changed).
import { installationChain } from './installation-chain.js';
import { Option, type Command } from 'commander';
import type { Config } from '../config/config.js';
import type { Ctx } from '../services/context.js';
import { cancelChainTx, chainHandle, chainOverview, listChainTxs, requireChain, resyncChain, type ChainOverview } from '../services/chain-ops.js';
import { formatUnits } from '../domain/amounts.js';
import { integer, table, UsageError, type Output } from './args.js';
import { ApiError } from '../util/errors.js';
import { cliActor } from './keys.js';

export interface ChainOpsDeps {
  /** A command with --json and the common shape (main.ts). */
  leaf(parent: Command, name: string, description: string): Command;
  /** Runs a command on the installation's store and secrets, then closes it (main.ts). */
  withCtx(fn: (ctx: Ctx, config: Config) => Promise<Output>): Promise<void>;
}

const chainIdOption = (mandatory: boolean) => {
  const o = new Option('--chain <id>', mandatory ? 'the chain id' : 'only this chain (default: every chain)').argParser(integer(1, Number.MAX_SAFE_INTEGER));
  return mandatory ? o.makeOptionMandatory() : o;
};

/**
 * The chains the configuration serves (one, with `only`: a UsageError, exit 2, names the served ones
 * otherwise), each at the installation's URL and checked to be the installation's chain.
 */
async function handlesFor(ctx: Ctx, config: Config, only?: number) {
  const specs = only === undefined ? config.chains : config.chains.filter((c) => c.id === only);
  if (only !== undefined && specs.length === 0) {
    try {
      requireChain(
        config.chains.map((spec) => chainHandle(config, spec)),
        only,
      );
    } catch (err) {
      if (err instanceof ApiError) throw new UsageError(err.message);
      throw err;
    }
  }
  return Promise.all(specs.map((spec) => installationChain(ctx, config, spec)));
}

/** Wei as the native currency, exact (`0.014729 ETH`), as the console shows it; the JSON keeps wei. */
const native = (wei: string | null, currency: string) => (wei === null || wei === '-1' ? '-' : `${formatUnits(BigInt(wei))} ${currency}`);

function overviewText(o: ChainOverview, currency: string): string {
  const fee = o.base_fee_gwei === null ? '-' : `${o.base_fee_gwei} gwei`;
  const ceiling = o.max_fee_gwei === null ? 'no ceiling' : `ceiling ${o.max_fee_gwei} gwei`;
  const providers = table(
    o.providers.map((p) => ({ ...p, latency: p.latency_ms === null ? null : `${p.latency_ms} ms` })),
    [
      ['provider', 'provider'],
      ['state', 'state'],
      ['calls', 'calls'],
      ['errors', 'errors'],
      ['latency', 'latency'],
      ['last_error', 'last error'],
    ],
    '  (no provider calls yet)',
  );
  const relayers = table(
    o.relayers.map((r) => ({ ...r, balance: native(r.balance_wei, currency) })),
    [
      ['role', 'role'],
      ['state', 'state'],
      ['address', 'address'],
      ['balance', 'balance'],
      ['low', 'low'],
      ['nonce', 'nonce'],
      ['pending_nonce', 'pending'],
      ['next_nonce', 'next'],
      ['in_flight', 'in flight'],
    ],
    '(no accounts)',
  );
  return [
    `Chain ${o.chain_id} ${o.name}${o.embedded ? ' (embedded)' : ''}: ${o.status}`,
    `  head ${o.head ?? '-'}, base fee ${fee} (${ceiling}), low under ${native(o.low_balance_wei, currency)}`,
    `  ${o.unconfirmed_transactions} unconfirmed transaction(s), ${o.stuck_transactions} stuck`,
    providers,
    relayers,
  ].join('\n');
}

/** Adds status, txs, cancel and resync to the `chain` command group. */
// Long: one table of subcommands, a short entry each.
export function addChainOpsCommands(chain: Command, { leaf, withCtx }: ChainOpsDeps): void {
  leaf(chain, 'status', 'head, base fee and ceiling, providers, relayers (balance, nonces, in flight)')
    .addOption(chainIdOption(false))
    .action((o: { chain?: number }) =>
      withCtx(async (ctx, config) => {
        const handles = await handlesFor(ctx, config, o.chain);
        const chains = await Promise.all(handles.map((h) => chainOverview(ctx, h)));
        return { json: { chains }, text: chains.map((c, i) => overviewText(c, handles[i].spec.currency)).join('\n\n') };
      }),
    );

  leaf(chain, 'txs', 'transactions not confirmed yet, oldest first')
    .option('--stuck', 'only those unconfirmed for longer than CHAIN_STUCK_SECONDS')
    .addOption(chainIdOption(false))
    .option('--limit <n>', 'entries (1-1000)', integer(1, 1000), 100)
    .action((o: { stuck?: boolean; chain?: number; limit: number }) =>
      withCtx(async (ctx, config) => {
        if (o.chain !== undefined) await handlesFor(ctx, config, o.chain);
        const transactions = await listChainTxs(ctx, { chainId: o.chain, stuck: !!o.stuck, limit: o.limit });
        const rows = transactions.map((t) => ({ ...t, fee: t.max_fee_gwei === null ? null : `${t.max_fee_gwei} gwei`, age: `${t.age_s} s` }));
        const text = table(
          rows,
          [
            ['id', 'tx'],
            ['chain_id', 'chain'],
            ['kind', 'kind'],
            ['status', 'status'],
            ['stuck', 'stuck'],
            ['from', 'from'],
            ['nonce', 'nonce'],
            ['replacements', 'replaced'],
            ['fee', 'max fee'],
            ['age', 'age'],
            ['hash', 'hash'],
            ['awaiting', 'awaiting evidence'],
          ],
          o.stuck ? '(no stuck transactions)' : '(no unconfirmed transactions)',
        );
        return { json: { transactions }, text };
      }),
    );

  leaf(chain, 'cancel', 'cancel a transaction that waits or is stuck: a 0-value self-transfer at its nonce, with higher fees, takes its place')
    .argument('<tx>', 'the transaction id (see: mintworks chain txs)', integer(1, Number.MAX_SAFE_INTEGER))
    .action((tx: number) =>
      withCtx(async (ctx, config) => {
        const r = await cancelChainTx(ctx, await handlesFor(ctx, config), tx, cliActor());
        return {
          json: r,
          text: `Transaction ${r.tx} (${r.kind}, nonce ${r.nonce} of ${r.from}) replaced by a cancellation ${r.cancel_hash} at up to ${r.max_fee_gwei} gwei: ${r.broadcast}.\n  ${r.outcome}.`,
        };
      }),
    );

  leaf(chain, 'resync', "raise the relayers' next nonces to the chain's and send again what the node dropped")
    .addOption(chainIdOption(true))
    .action((o: { chain: number }) =>
      withCtx(async (ctx, config) => {
        const r = await resyncChain(ctx, (await handlesFor(ctx, config, o.chain))[0], cliActor());
        const text = table(
          r.accounts as unknown as Record<string, unknown>[],
          [
            ['address', 'account'],
            ['nonce', 'nonce'],
            ['pending_nonce', 'pending'],
            ['next_nonce_before', 'next before'],
            ['next_nonce', 'next'],
            ['resent', 'sent again'],
          ],
          '(no accounts have sent on this chain)',
        );
        return { json: r, text: `Chain ${r.chain_id} resynced.\n${text}` };
      }),
    );
}
