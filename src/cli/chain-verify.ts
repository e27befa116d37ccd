// `mintworks chain verify [--chain ID] [--app UID] [--fix] [--json]`: every record against the chain
// (src/services/verify/verify.ts). Exit code 0 when every record read agrees (none left after --fix), 3
// when some diverge (after --fix: those it could not set right), 4 when none diverges but some could not
// be read (the chain did not answer: nothing is proven for them), 1 on an error, 2 on a usage error.
import { Option, type Command } from 'commander';
import type { Config } from '../config/config.js';
import type { Ctx } from '../services/context.js';
import { chainHandle, requireChain } from '../services/chain-ops.js';
import { mergeReports, remaining, verifyChain, type VerifyReport } from '../services/verify/verify.js';
import { ApiError } from '../util/errors.js';
import { integer, requireApp, table, UsageError, type Output } from './args.js';
import { cliActor } from './keys.js';

/** The exit code of a verification that leaves divergences (0: none; 1 and 2 stay errors and usage errors). */
export const DIVERGENCES_EXIT_CODE = 3;
/** No divergence, but records the chain did not let us read. */
export const UNVERIFIED_EXIT_CODE = 4;

export interface ChainVerifyDeps {
  leaf(parent: Command, name: string, description: string): Command;
  withCtx(fn: (ctx: Ctx, config: Config) => Promise<Output>): Promise<void>;
}

const side = (v: unknown) => (v === null ? '-' : String(v));

/** The report as a table, with the counts under it. */
export function verifyText(r: VerifyReport, fixing: boolean): string {
  const rows = r.divergences.map((d) => ({
    ...d,
    record: `${d.record.type} ${d.record.uid}`,
    recorded: side(d.recorded),
    on_chain: side(d.on_chain),
    state: d.fixed ?? (d.fixable ? 'fixable' : 'not fixable'),
  }));
  const list = table(
    rows,
    [
      ['chain_id', 'chain'],
      ['kind', 'kind'],
      ['app_uid', 'app'],
      ['record', 'record'],
      ['field', 'field'],
      ['recorded', 'recorded'],
      ['on_chain', 'on chain'],
      ['state', fixing ? 'fix' : 'fixable'],
    ],
    'No divergence: every record checked agrees with the chain.',
  );
  const counts = (c: Record<string, number>) =>
    Object.entries(c)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${n} ${k}`)
      .join(', ') || 'none';
  const left = remaining(r).length;
  return [
    list,
    '',
    `checked: ${counts(r.checked)}`,
    `in flight (not judged): ${counts(r.in_flight)}`,
    ...(Object.values(r.unverified).some((n) => n > 0) ? [`not read (the chain did not answer): ${counts(r.unverified)}`] : []),
    ...(fixing ? [`${r.divergences.length - left} fixed, ${left} left`] : []),
  ].join('\n');
}

export function addChainVerifyCommand(chain: Command, { leaf, withCtx }: ChainVerifyDeps): void {
  leaf(chain, 'verify', 'every record against the chain; exit code 3 when some disagree, 4 when some could not be read')
    .addOption(new Option('--chain <id>', 'only this chain (default: every chain)').argParser(integer(1, Number.MAX_SAFE_INTEGER)))
    .option('--app <uid>', "only this App's records")
    .option('--fix', 'set each fixable record to what the chain shows (audited; the missed events are emitted)')
    .action((o: { chain?: number; app?: string; fix?: boolean }) =>
      withCtx(async (ctx, config) => {
        let handles = config.chains.map((spec) => chainHandle(config, spec));
        if (o.chain !== undefined) {
          try {
            handles = [requireChain(handles, o.chain)];
          } catch (err) {
            if (err instanceof ApiError) throw new UsageError(err.message);
            throw err;
          }
        }
        const appUid = o.app === undefined ? undefined : await requireApp(ctx.db, o.app);
        const reports: VerifyReport[] = [];
        for (const h of handles) reports.push(await verifyChain(ctx, h, { appUid, fix: o.fix ? { actor: cliActor() } : undefined }));
        const r = mergeReports(reports);
        if (remaining(r).length > 0) process.exitCode = DIVERGENCES_EXIT_CODE;
        else if (Object.values(r.unverified).some((n) => n > 0)) process.exitCode = UNVERIFIED_EXIT_CODE;
        return { json: r, text: verifyText(r, !!o.fix) };
      }),
    );
}
