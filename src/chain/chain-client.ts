// A viem client of one chain over its providers (failover between them, their health counted).
import { createPublicClient, defineChain, type PublicClient } from 'viem';
import type { ChainSpec } from './chains.js';
import type { Logger } from 'pino';
import { ProviderSet, redactRpcUrl } from './providers.js';
import { rpcUrlsOf } from './chains.js';
import { raise } from './alerts.js';

/** The chain's providers (the embedded chain: its own node), a provider going down raised as an operator alert. */
export function providerSetFor(spec: ChainSpec, rpcUrl: string, log: Logger): ProviderSet {
  const urls = spec.embedded ? [rpcUrl] : rpcUrlsOf(spec).length ? rpcUrlsOf(spec) : [rpcUrl];
  return new ProviderSet(spec.id, urls, {
    onStateChange: (p, previous) => {
      if (p.state === 'down')
        raise('chain.provider_down', { chain_id: spec.id, chain: spec.name, provider: p.provider, last_error: p.last_error, providers: urls.length });
      else if (p.state === 'up' && previous === 'down') log.info({ provider: p.provider }, 'JSON-RPC provider answers again');
      else if (p.state === 'rate_limited') log.debug({ provider: p.provider, retryAt: p.retry_at }, 'JSON-RPC provider rate limited');
    },
  });
}

export function chainClient(spec: ChainSpec, providers: ProviderSet, timeoutMs: number, retryCount: number): PublicClient {
  return createPublicClient({
    chain: defineChain({
      id: spec.id,
      name: spec.name,
      nativeCurrency: { name: spec.currency, symbol: spec.currency, decimals: 18 },
      rpcUrls: { default: { http: [providers.primaryUrl] } },
    }),
    transport: providers.transport({ timeoutMs, retryCount }),
    pollingInterval: 250,
  }) as PublicClient;
}

export class WrongChainError extends Error {}

/**
 * Checks that the node (every provider of it) serves the configured chain id: a node of another chain
 * would get its transactions refused, or its reads wrong. A configuration error, not an outage.
 */
export async function checkChainId(client: PublicClient, providers: ProviderSet, spec: ChainSpec, rpcUrl: string): Promise<void> {
  const id = await client.getChainId();
  const where = spec.embedded ? 'CHAIN_ID' : spec.rpc ? 'CHAINS / CHAIN_ID' : 'CHAINS';
  if (id !== spec.id) throw new WrongChainError(`the chain at ${redactRpcUrl(rpcUrl)} has chain id ${id}, but it is configured as chain ${spec.id} (${where})`);
  if (providers.size < 2) return;
  for (const { provider, result } of await providers.onEach({ method: 'eth_chainId' }, 5000)) {
    if (result !== null && Number(result) !== spec.id)
      throw new WrongChainError(`the provider ${provider} of chain ${spec.id} serves chain id ${Number(result)} (${where})`);
  }
}
