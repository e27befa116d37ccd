// Which chain an installation's records belong to: each chain's genesis block hash, and the URL of the
// embedded chain, recorded in `meta` by the process that runs the chain. The CLI talks to the chains
// on its own (`mintworks chain …`, `keys rotate-relayers`): it takes the embedded chain's URL from
// here rather than from its own environment (a shell without the service's ANVIL_PORT would reach
// whatever answers on 8545, another installation's anvil with the same chain id), and refuses a
// chain whose genesis is not the recorded one, so it never reads or sends on someone else's chain.
import type { Logger } from 'pino';
import type { Hex } from 'viem';
import type { Db } from '../store/db.js';
import { writeMeta } from './installation.js';

const genesisKey = (chainId: number) => `chain.${chainId}.genesis`;
const rpcKey = (chainId: number) => `chain.${chainId}.embedded_rpc`;

export class ForeignChainError extends Error {}

interface BlockReader {
  getBlock(args: { blockNumber: bigint }): Promise<{ hash: Hex | null }>;
}

/** The chain's genesis block hash, as its node answers it. */
export async function genesisHash(client: BlockReader): Promise<string> {
  const b = await client.getBlock({ blockNumber: 0n });
  return (b.hash ?? '').toLowerCase();
}

/**
 * Records a served chain's identity (the process that runs its workers, once the chain answers). The
 * genesis is recorded at the first start; the embedded chain's URL at every start (ANVIL_PORT may change).
 * A later genesis that differs is said: the records of this database belong to another chain.
 */
export async function recordChainIdentity(db: Db, log: Logger, chain: { id: number; embedded: boolean; rpcUrl: string; genesis: string }): Promise<void> {
  const row = await db.selectFrom('meta').select('value').where('key', '=', genesisKey(chain.id)).executeTakeFirst();
  const values: Record<string, string> = {};
  if (!row) values[genesisKey(chain.id)] = chain.genesis;
  else if (row.value !== chain.genesis) {
    log.warn(
      { chain: chain.id, recorded: row.value, now: chain.genesis },
      "this chain's genesis block is not the one recorded at the first start: its node is another chain (a reset, or a state lost), and the records of this database do not match it",
    );
    if (chain.embedded) values[genesisKey(chain.id)] = chain.genesis; // the embedded chain is this installation's whatever it holds
  }
  if (chain.embedded) values[rpcKey(chain.id)] = chain.rpcUrl;
  if (Object.keys(values).length) await writeMeta(db, values);
}

/** What the installation recorded of a chain (nulls before its first start). */
export async function recordedChain(db: Db, chainId: number): Promise<{ genesis: string | null; embeddedRpc: string | null }> {
  const rows = await db
    .selectFrom('meta')
    .select(['key', 'value'])
    .where('key', 'in', [genesisKey(chainId), rpcKey(chainId)])
    .execute();
  const get = (k: string) => rows.find((r) => r.key === k)?.value ?? null;
  return { genesis: get(genesisKey(chainId)), embeddedRpc: get(rpcKey(chainId)) };
}

/** Refuses a node whose genesis differs from the recorded one, naming both (nothing recorded yet: nothing to compare). */
export async function assertInstallationChain(client: BlockReader, chainId: number, where: string, recorded: string | null): Promise<void> {
  if (!recorded) return;
  const found = await genesisHash(client);
  if (found !== recorded) {
    throw new ForeignChainError(
      `the chain at ${where} is not this installation's chain ${chainId}: its genesis block is ${found}, but this installation recorded ${recorded} at its first start. ` +
        'Point the command at the installation (its DATA_DIR / DATABASE_URL) while its service runs, or set CHAIN_RPC_URL / ANVIL_PORT as the service has them',
    );
  }
}
