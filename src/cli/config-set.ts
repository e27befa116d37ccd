// `mintworks config …`: the settings every process of an installation must agree on (recorded in the
// database by the first process, see services/installation.ts): show them, or change one on purpose.
import { Command } from 'commander';
import type { Config } from '../config/config.js';
import type { Ctx } from '../services/context.js';
import { installationSettings, operatorDigest, recordChains, recordedPublicUrl, recordOperatorToken, setPublicUrl } from '../services/installation.js';
import { deployedCollections, repointCollections } from '../services/collections/base-uri.js';
import { normalPublicUrl, publicUrlProblem } from '../domain/public-url.js';
import { recordAudit } from '../services/audit.js';
import { cliActor } from './keys.js';
import { confirm } from './confirm.js';
import { UsageError, type Output } from './args.js';

export interface ConfigCommandDeps {
  leaf(parent: Command, name: string, description: string): Command;
  withCtx(fn: (ctx: Ctx, config: Config) => Promise<Output>, reads?: boolean): Promise<void>;
}

// Long: one table of subcommands, a short entry each.
export function configCommand(deps: ConfigCommandDeps): Command {
  const config = new Command('config').description("the installation's settings every process must agree on (recorded in the database)").exitOverride();

  deps.leaf(config, 'show', 'the recorded public URL, chains and operator token digest').action(() =>
    deps.withCtx(async (ctx) => {
      const s = await installationSettings(ctx.db);
      return {
        json: s,
        text: [
          `public URL      ${s.public_url ?? '(none recorded)'}${s.public_url_source === 'default' ? '  (a default from HOST:PORT; PUBLIC_URL was not set)' : ''}`,
          `chains          ${s.chains ?? '(none recorded)'}`,
          `operator token  ${s.operator_token_sha256 ? `sha-256 ${s.operator_token_sha256.slice(0, 12)}…` : '(none recorded)'}`,
        ].join('\n'),
      };
    }, true),
  );

  const set = config.command('set').description('change a recorded setting').exitOverride();
  deps
    .leaf(set, 'public-url', 'the URL clients reach the installation at (token URIs, links, the console); shows what it repoints and asks first')
    .argument('<url>', 'http(s)://host[:port][/path]: an origin and an optional clean path, as PUBLIC_URL')
    .option('--yes', 'do not ask (scripts): repoint at once')
    .action((value: string, o: { yes?: boolean }) =>
      deps.withCtx(async (ctx) => {
        const problem = publicUrlProblem(value);
        if (problem)
          throw new UsageError(
            `${JSON.stringify(value)} is not a public URL: ${problem}. Give an origin and an optional clean path, e.g. https://mint.example.com`,
          );
        const next = normalPublicUrl(value);
        const before = await recordedPublicUrl(ctx.db);
        const previous = before?.url ?? null;
        // Deployed collections keep the base token URI they were deployed with: each is sent the new one.
        const targets = previous !== null && previous !== next ? await deployedCollections(ctx) : [];
        const plan = [
          `Public URL: ${previous ?? '(none recorded)'} -> ${next}`,
          targets.length
            ? `${targets.length} deployed collection(s) get a setBaseURI transaction on chain, to ${next}/metadata/<collection>/:\n` +
              targets.map((t) => `  ${t.uid}  chain ${t.chain_id}  ${t.contract_address}`).join('\n')
            : 'No deployed collection is repointed.',
        ].join('\n');
        process.stderr.write(`${plan}\n`);
        if (!o.yes) await confirm('Record it and repoint?');
        await setPublicUrl(ctx.db, next);
        const moved = targets.length ? await repointCollections(ctx, next, targets) : [];
        await recordAudit(ctx.db, cliActor(), {
          action: 'config.public_url_set',
          details: { public_url: next, previous, collections_repointed: moved.map((m) => m.uid) },
        });
        const notes = [
          `Public URL recorded: ${next}${previous && previous !== next ? ` (was ${previous})` : ''}.`,
          'Restart every process with PUBLIC_URL set to it (or unset): a process whose PUBLIC_URL differs refuses to start.',
        ];
        if (moved.length) {
          notes.push(
            `${moved.length} deployed collection(s) keep ${previous}/metadata/<collection>/ as their base token URI on chain: a setBaseURI ` +
              `transaction to ${next}/metadata/<collection>/ is queued for each, sent by the worker processes of their chains. Until it is mined, ` +
              `development Apps' tokens resolve to the old URL (keep it answering meanwhile). Production Apps' tokens (ipfs://) are not affected.`,
          );
        }
        return { json: { public_url: next, previous, collections_repointed: moved }, text: notes.join('\n') };
      }, true),
    );
  deps.leaf(set, 'chains', "record the chains of this environment (CHAIN_RPC_URL, CHAINS) as the installation's").action(() =>
    deps.withCtx(async (ctx, cfg) => {
      const chains = await recordChains(ctx.db, cfg);
      await recordAudit(ctx.db, cliActor(), { action: 'config.chains_set', details: { chains } });
      return { json: { chains }, text: `Chains recorded: ${chains}. Restart every process with the same CHAIN_RPC_URL / CHAINS.` };
    }, true),
  );
  deps.leaf(set, 'operator-token', "record OPERATOR_TOKEN of this environment as the installation's").action(() =>
    deps.withCtx(async (ctx, cfg) => {
      if (!cfg.operatorToken) throw new UsageError('OPERATOR_TOKEN is not set: set it to the new token, then run this again');
      await recordOperatorToken(ctx.db, cfg.operatorToken);
      await recordAudit(ctx.db, cliActor(), {
        action: 'config.operator_token_set',
        details: { sha256_prefix: operatorDigest(cfg.operatorToken).slice(0, 12) },
      });
      return { json: { recorded: true }, text: 'Operator token recorded (its sha-256 only). Restart every process with the same OPERATOR_TOKEN.' };
    }, true),
  );
  return config;
}
