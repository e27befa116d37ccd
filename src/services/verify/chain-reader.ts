// What the verifier reads from the chain, with viem: a token's owner and URI (or whether it was burned or
// never minted), a contract's code, owner, operators and forwarder, a reward's withdrawal, usedRef and
// allocated(), and what a claim's transactions paid. A revert is a fact (ownerOf of a burned token
// reverts); a lookup that fails (a node down, a timeout) is not, and gives null: the rules conclude
// nothing from it.
import { BaseError, ContractFunctionRevertedError, parseAbi, parseAbiItem, parseEventLogs, type Address, type Hex, type PublicClient } from 'viem';
import type { CollectionInfoFacts, TokenFacts } from './divergences.js';

const COLLECTION_ABI = parseAbi([
  'function ownerOf(uint256) view returns (address)',
  'function tokenURI(uint256) view returns (string)',
  'function mint(address to, uint256 id, bytes32 cid, bool dagPb)',
  'error TokenBurned(uint256 id)',
]);
const CONTRACT_ABI = parseAbi([
  'function owner() view returns (address)',
  'function isOperator(address) view returns (bool)',
  'function trustedForwarder() view returns (address)',
]);
const COLLECTION_INFO_ABI = parseAbi([
  'function royaltyInfo(uint256 id, uint256 price) view returns (address, uint256)',
  'function contractURI() view returns (string)',
]);
const CLAIMED_EVENT = parseAbiItem('event Claimed(address indexed user, address indexed to, uint256 amount, bytes32 indexed ref)');
const REWARDS_ABI = parseAbi([
  'function withdrawn() view returns (bool)',
  'function usedRef(bytes32) view returns (bool)',
  'function allocated(address) view returns (uint256)',
  'event Claimed(address indexed user, address indexed to, uint256 amount, bytes32 indexed ref)',
]);

/** The chain reads the verifier needs: a running service's client or the CLI's (src/services/chain-ops.ts chainHandle). */
export type ChainClient = Pick<PublicClient, 'readContract' | 'simulateContract' | 'getCode' | 'getTransactionReceipt' | 'getLogs'>;

/** The error a call reverted with (its name, or 'reverted' without one); null when the call did not revert but failed. */
function revertOf(err: unknown): string | null {
  if (!(err instanceof BaseError)) return null;
  const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
  if (!reverted) return null;
  return reverted.data?.errorName ?? reverted.reason ?? 'reverted';
}

/** Runs a read; a revert gives `{reverted}`, a failed lookup `null`. */
async function attempt<T>(read: () => Promise<T>): Promise<{ ok: T } | { reverted: string } | null> {
  try {
    return { ok: await read() };
  } catch (err) {
    const r = revertOf(err);
    return r === null ? null : { reverted: r };
  }
}

/**
 * A token's state. ownerOf reverts alike for a burned token and one never minted; minting its id again
 * (simulated, from an operator: nothing is sent) tells them apart: the contract refuses a burned id with
 * TokenBurned, and would mint one that never existed.
 */
export async function readToken(client: ChainClient, contract: Address, tokenId: number, operator: Address): Promise<TokenFacts> {
  const id = BigInt(tokenId);
  const owner = await attempt(() => client.readContract({ address: contract, abi: COLLECTION_ABI, functionName: 'ownerOf', args: [id] }));
  if (owner === null) return null;
  if ('ok' in owner) {
    const uri = await attempt(() => client.readContract({ address: contract, abi: COLLECTION_ABI, functionName: 'tokenURI', args: [id] }));
    if (uri === null) return null; // half a reading is none: the token is judged on the next one
    return { state: 'owned', owner: owner.ok.toLowerCase(), tokenUri: 'ok' in uri ? uri.ok : null };
  }
  const mint = await attempt(() =>
    client.simulateContract({
      address: contract,
      abi: COLLECTION_ABI,
      functionName: 'mint',
      args: [operator, id, `0x${'0'.repeat(64)}`, false],
      account: operator,
    }),
  );
  if (mint === null) return null;
  if ('ok' in mint) return { state: 'absent' };
  return mint.reverted === 'TokenBurned' ? { state: 'burned' } : null; // another revert (not an operator…): unknown
}

export interface ContractFacts {
  hasCode: boolean | null;
  owner: string | null;
  forwarder: string | null;
  operators: { address: string; is: boolean | null }[];
}

const value = <T>(r: { ok: T } | { reverted: string } | null): T | null => (r && 'ok' in r ? r.ok : null);

/** Every fact of a contract was read (a failed lookup leaves a null). */
export const readInFull = (f: ContractFacts): boolean =>
  f.hasCode === false || (f.hasCode === true && f.owner !== null && f.forwarder !== null && f.operators.every((o) => o.is !== null));

/** Code, owner, trusted forwarder and each account's operator role of a collection or reward contract. */
export async function readContract(client: ChainClient, address: Address, accounts: readonly string[]): Promise<ContractFacts> {
  const code = await client.getCode({ address }).then(
    (c) => (c ?? '0x') !== '0x',
    () => null,
  );
  if (code !== true) return { hasCode: code, owner: null, forwarder: null, operators: [] };
  const [owner, forwarder, operators] = await Promise.all([
    attempt(() => client.readContract({ address, abi: CONTRACT_ABI, functionName: 'owner' })),
    attempt(() => client.readContract({ address, abi: CONTRACT_ABI, functionName: 'trustedForwarder' })),
    Promise.all(
      accounts.map(async (a) => ({
        address: a,
        is: value(await attempt(() => client.readContract({ address, abi: CONTRACT_ABI, functionName: 'isOperator', args: [a as Address] }))),
      })),
    ),
  ]);
  return { hasCode: true, owner: value(owner)?.toLowerCase() ?? null, forwarder: value(forwarder)?.toLowerCase() ?? null, operators };
}

/** A collection's royalty (as royaltyInfo(1, 10000) answers: receiver and basis points) and contractURI(); null where not read. */
export async function readCollectionInfo(client: ChainClient, address: Address): Promise<CollectionInfoFacts> {
  const [royalty, contractUri] = await Promise.all([
    attempt(() => client.readContract({ address, abi: COLLECTION_INFO_ABI, functionName: 'royaltyInfo', args: [1n, 10_000n] })),
    attempt(() => client.readContract({ address, abi: COLLECTION_INFO_ABI, functionName: 'contractURI' })),
  ]);
  const r = value(royalty);
  return { royalty: r ? { receiver: r[0].toLowerCase(), bps: Number(r[1]) } : null, contractUri: value(contractUri) };
}

export async function readWithdrawn(client: ChainClient, reward: Address): Promise<boolean | null> {
  return value(await attempt(() => client.readContract({ address: reward, abi: REWARDS_ABI, functionName: 'withdrawn' })));
}

export async function readUsedRef(client: ChainClient, reward: Address, ref: Hex): Promise<boolean | null> {
  return value(await attempt(() => client.readContract({ address: reward, abi: REWARDS_ABI, functionName: 'usedRef', args: [ref] })));
}

export async function readAllocated(client: ChainClient, reward: Address, wallet: Address): Promise<bigint | null> {
  return value(await attempt(() => client.readContract({ address: reward, abi: REWARDS_ABI, functionName: 'allocated', args: [wallet] })));
}

/**
 * What a claim was paid: the Claimed events carrying its ref, read from the chain's log index (a
 * provider that does not serve a receipt yet still serves its logs), else from the receipts of every
 * hash ever sent for it. `receipts`: 1 when the logs answered, else how many of those hashes have a
 * receipt (none: nothing can be concluded).
 */
export async function readClaimPaid(
  client: ChainClient,
  reward: Address,
  ref: Hex,
  hashes: readonly string[],
): Promise<{ paid: bigint | null; receipts: number }> {
  const logs = await client.getLogs({ address: reward, event: CLAIMED_EVENT, args: { ref }, fromBlock: 0n }).catch(() => null);
  if (logs) return { paid: logs.length ? logs.reduce((sum, l) => sum + (l.args.amount ?? 0n), 0n) : null, receipts: 1 };
  let paid: bigint | null = null;
  let receipts = 0;
  for (const hash of hashes) {
    const receipt = await client.getTransactionReceipt({ hash: hash as Hex }).catch(() => null);
    if (!receipt) continue;
    receipts++;
    if (receipt.status !== 'success') continue;
    for (const log of parseEventLogs({ abi: REWARDS_ABI, logs: receipt.logs, eventName: 'Claimed' })) {
      if (log.address.toLowerCase() !== reward.toLowerCase() || log.args.ref.toLowerCase() !== ref.toLowerCase()) continue;
      paid = (paid ?? 0n) + log.args.amount;
    }
  }
  return { paid, receipts };
}

/** Runs `fn` over `items`, at most `limit` at a time, results in order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
