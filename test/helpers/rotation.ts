// What the relayer rotation tests check on chain and in the database, shared by their files.
import { parseAbi, type Address, type PublicClient } from 'viem';
import type { Db } from '../../src/store/db.js';
import { waitFor } from './env.js';

export const operatorAbi = parseAbi(['function owner() view returns (address)', 'function isOperator(address) view returns (bool)']);

/** Waits for the rotation to finish (its row has finished_at), printing nothing. */
export async function rotationFinished(db: Db, id: number, timeoutMs = 180_000) {
  return waitFor(
    `rotation ${id} done`,
    async () => {
      const r = await db.selectFrom('relayer_rotations').selectAll().where('id', '=', id).executeTakeFirst();
      return r?.finished_at ? r : null;
    },
    timeoutMs,
    250,
  );
}

/** Every collection and reward contract of the chain. */
export async function contractsOf(db: Db, chainId: number): Promise<Address[]> {
  const c = await db.selectFrom('collections').select('contract_address').where('chain_id', '=', chainId).where('contract_address', 'is not', null).execute();
  const r = await db.selectFrom('rewards').select('contract_address').where('chain_id', '=', chainId).where('contract_address', 'is not', null).execute();
  return [...c, ...r].map((x) => x.contract_address as Address);
}

/** On chain: the new relayers are operators of every contract, the old ones are not, the deployer owns each. */
export async function operatorsOnChain(rpc: PublicClient, contracts: Address[], fresh: string[], old: string[]) {
  const out: { contract: string; owner: string; fresh: boolean[]; old: boolean[] }[] = [];
  for (const address of contracts) {
    const owner = ((await rpc.readContract({ address, abi: operatorAbi, functionName: 'owner' })) as string).toLowerCase();
    const is = (a: string) => rpc.readContract({ address, abi: operatorAbi, functionName: 'isOperator', args: [a as Address] }) as Promise<boolean>;
    out.push({ contract: address, owner, fresh: await Promise.all(fresh.map(is)), old: await Promise.all(old.map(is)) });
  }
  return out;
}
