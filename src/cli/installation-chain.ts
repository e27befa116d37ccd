// The CLI's handle on one of the installation's chains: at the URL the installation recorded for its
// embedded chain (not whatever ANVIL_PORT this shell has), and refused when its genesis block is not
// the one the installation recorded (services/chain-identity.ts).
import type { Config } from '../config/config.js';
import type { Ctx } from '../services/context.js';
import { rpcUrlsOf, type ChainSpec } from '../chain/chains.js';
import { chainHandle } from '../services/chain-ops.js';
import { assertInstallationChain, ForeignChainError, recordedChain } from '../services/chain-identity.js';
import { redactRpcUrl } from '../chain/providers.js';

export async function installationChain(ctx: Ctx, config: Config, spec: ChainSpec) {
  const recorded = await recordedChain(ctx.db, spec.id);
  const h = chainHandle(config, spec, recorded.embeddedRpc);
  const rpcUrl = spec.embedded ? (recorded.embeddedRpc ?? `http://127.0.0.1:${config.anvilPort}`) : (spec.rpc ?? rpcUrlsOf(spec)[0] ?? '');
  try {
    await assertInstallationChain(h.client, spec.id, redactRpcUrl(rpcUrl), recorded.genesis);
  } catch (err) {
    if (err instanceof ForeignChainError) throw err;
    // The node does not answer: the command reports that itself (a status shows the provider down).
  }
  return { ...h, rpcUrl };
}
