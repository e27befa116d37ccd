// `mintworks chain …`: a development chain of its own, and funding the installation's accounts.
//
//  - `chain start` runs the bundled anvil as a process of its own (in the foreground, for a terminal or
//    a systemd unit) with its own state directory, so no installation's process owns it: API and worker
//    processes all reach it at CHAIN_RPC_URL, start and stop in any order, and none of them stops it.
//  - `chain fund` gives the installation's deployer and relayers funds on a development chain (anvil or
//    hardhat); on any other chain it prints what to send where.
import { installationChain } from './installation-chain.js';
import { recordAudit } from '../services/audit.js';
import { cliActor } from './keys.js';
import fs from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import pino from 'pino';
import { createPublicClient, formatEther, getAddress, http, parseEther, toHex, type Address } from 'viem';
import type { Config } from '../config/config.js';
import type { Ctx } from '../services/context.js';
import { startEmbeddedChain } from '../chain/anvil.js';
import { lockDataDir } from '../boot/data-dir-lock.js';
import { LOW_BALANCE_WEI } from '../domain/chain-funding.js';
import { relayerRows } from '../chain/relayer-set.js';
import { integer, UsageError, type Output } from './args.js';

export interface ChainCommandDeps {
  /** A command that does something: --json and the common shape (main.ts). */
  leaf(parent: Command, name: string, description: string): Command;
  /** Runs a command on the installation (`reads`: never creates one). */
  withCtx(fn: (ctx: Ctx, config: Config) => Promise<Output>, reads?: boolean): Promise<void>;
  print(o: Output): void;
}

/** The `chain` command group, for main.ts to add to the program. */
// Long: one table of subcommands, a short entry each.
export function chainCommand(deps: ChainCommandDeps): Command {
  const chain = new Command('chain').description("a development chain of its own; funding the installation's accounts").exitOverride();

  deps
    .leaf(chain, 'start', 'run the bundled anvil in the foreground until stopped (Ctrl-C, SIGTERM); its state is saved in --dir')
    .option('--port <port>', 'JSON-RPC port on 127.0.0.1', integer(1, 65535), 8545)
    .option('--block-time <seconds>', 'a block every this many seconds, transactions mined only in them (default: a block per transaction)', integer(1, 3600))
    .option('--chain-id <id>', 'the chain id', integer(1, Number.MAX_SAFE_INTEGER), 31337)
    .option('--dir <dir>', 'where the chain keeps its state (chain.json); one chain per directory', './mintworks-chain')
    .action(async (o) => {
      const dir = path.resolve(o.dir);
      const log = pino({ level: 'info', base: { component: 'chain' } }, pino.destination(2));
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      await lockDataDir(dir, 'exclusive', { scope: 'chain', what: 'the chain directory' });
      const node = await startEmbeddedChain({ dataDir: dir, port: o.port, chainId: o.chainId, logger: log, blockTime: o.blockTime, mixedMining: false });
      deps.print({
        json: { rpc_url: node.rpcUrl, chain_id: o.chainId, block_time: o.blockTime ?? null, dir, pid: node.pid },
        text: `chain ${o.chainId} ready at ${node.rpcUrl} (${o.blockTime ? `a block every ${o.blockTime} s` : 'a block per transaction'}; state in ${path.join(dir, 'chain.json')}); Ctrl-C or SIGTERM stops it`,
      });
      await new Promise<void>((resolve) => {
        const stop = () => void node.stop().then(resolve, resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        node.onExit((code, signal) => {
          log.error({ code, signal }, 'the chain exited');
          process.exit(1);
        });
      });
    });

  deps
    .leaf(chain, 'fund', 'fund the deployer and relayers on a development chain (anvil, hardhat); elsewhere print what to send where')
    .addOption(new Option('--chain <id>', 'the chain (default: the default chain)').argParser(integer(1, Number.MAX_SAFE_INTEGER)))
    .option('--amount <eth>', 'balance each account is set to, in the native currency', '1000')
    .action((o) =>
      deps.withCtx(async (ctx, config) => {
        const spec = o.chain === undefined ? config.chains[0] : config.chains.find((c) => c.id === o.chain);
        if (!spec) throw new UsageError(`chain ${o.chain} is not one this installation serves (${config.chains.map((c) => c.id).join(', ')})`);
        let amount: bigint;
        try {
          amount = parseEther(o.amount);
        } catch {
          throw new UsageError(`--amount ${o.amount} is not an amount`);
        }
        const h = await installationChain(ctx, config, spec);
        const rpc = h.rpcUrl;
        const client = createPublicClient({ transport: http(rpc, { retryCount: 0, timeout: 10_000 }) });
        // The chain's relayer set (a rotation's new relayers included, the retired ones not); before the
        // chain was first set up, the first RELAYER_COUNT.
        const setRows = (await relayerRows(ctx.db, spec.id)).filter((r) => r.state !== 'retired');
        const relayers = setRows.length
          ? setRows.map((r) => ({ role: `relayer ${r.idx}${r.state === 'active' ? '' : ` (${r.state})`}`, address: getAddress(r.address) }))
          : Array.from({ length: config.relayerCount }, (_, i) => ({ role: `relayer ${i}`, address: ctx.keys.relayer(i).address }));
        const accounts = [{ role: 'deployer', address: ctx.keys.deployer().address }, ...relayers];
        let method: string | null = null;
        for (const m of ['anvil_setBalance', 'hardhat_setBalance']) {
          try {
            await client.request({ method: m as any, params: [accounts[0].address, toHex(amount)] as any });
            method = m;
            break;
          } catch {
            /* not this kind of node */
          }
        }
        if (method) for (const a of accounts.slice(1)) await client.request({ method: method as any, params: [a.address, toHex(amount)] as any });
        const rows = await Promise.all(
          accounts.map(async (a) => ({ ...a, balance_wei: (await client.getBalance({ address: a.address as Address })).toString() })),
        );
        const list = rows.map((r) => `  ${r.role.padEnd(22)} ${r.address}  ${formatEther(BigInt(r.balance_wei))} ${spec.currency}`).join('\n');
        if (method) {
          await recordAudit(ctx.db, cliActor(), {
            action: 'chain.funded',
            chain_id: spec.id,
            details: { method, amount_wei: amount.toString(), accounts: accounts.length },
          });
          return {
            json: { chain_id: spec.id, funded: true, method, accounts: rows },
            text: `Funded on chain ${spec.id} (${spec.name}) with ${method}:\n${list}`,
          };
        }
        return {
          json: { chain_id: spec.id, funded: false, accounts: rows },
          text:
            `Chain ${spec.id} (${spec.name}) at ${rpc} is not a development chain: send funds from a wallet of yours. ` +
            `Each relayer needs at least ${formatEther(LOW_BALANCE_WEI)} ${spec.currency} (it pays every mint's gas: more lasts longer); ` +
            `the deployer pays once, for the forwarder contract:\n${list}`,
        };
      }, true),
    );

  return chain;
}
