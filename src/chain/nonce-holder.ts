// Which transaction holds an account's nonce on chain: the evidence a transaction is judged replaced
// or dropped on. No JSON-RPC call answers it directly, so it is read off the chain: the first block
// after which the account's nonce is past it (its nonce at a block, searched back from the head, a few
// calls), then that block's transaction from the account at that nonce. Any answer missing on the way
// (a backend behind the others, a node without that block's state) gives `unknown`: no judgement.
import type { Address, Hex, PublicClient } from 'viem';

export type NonceHolder = { kind: 'held'; hash: Hex; block: number } | { kind: 'unknown'; why: string };

/** The account's nonce after block `block` (its transaction count there); null when the node cannot say. */
async function countAt(client: PublicClient, address: Address, block: number): Promise<number | null> {
  if (block < 0) return 0;
  try {
    return await client.getTransactionCount({ address, blockNumber: BigInt(block) });
  } catch {
    return null;
  }
}

/**
 * The transaction that used `nonce` of `address`, found at or below `head`. The search steps back from
 * the head doubling its stride (the usual case is a recent nonce: a few calls), then halves the range.
 */
export async function findNonceHolder(client: PublicClient, address: Address, nonce: number, head: number): Promise<NonceHolder> {
  const atHead = await countAt(client, address, head);
  if (atHead === null) return { kind: 'unknown', why: `no account state at block ${head}` };
  if (atHead <= nonce) return { kind: 'unknown', why: `the nonce is not used at block ${head}` };
  // Invariant: count(hi) > nonce; count(lo) <= nonce (block -1 counts 0).
  let hi = head;
  let lo = head - 1;
  for (let stride = 1; ; stride *= 2) {
    const c = await countAt(client, address, lo);
    if (c === null) return { kind: 'unknown', why: `no account state at block ${lo}` };
    if (c <= nonce) break;
    hi = lo;
    lo = Math.max(-1, hi - stride * 2);
  }
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    const c = await countAt(client, address, mid);
    if (c === null) return { kind: 'unknown', why: `no account state at block ${mid}` };
    if (c > nonce) hi = mid;
    else lo = mid;
  }
  const block = await client.getBlock({ blockNumber: BigInt(hi), includeTransactions: true }).catch(() => null);
  if (!block) return { kind: 'unknown', why: `block ${hi} not available` };
  const tx = block.transactions.find((t) => t.from.toLowerCase() === address.toLowerCase() && t.nonce === nonce);
  if (!tx) return { kind: 'unknown', why: `block ${hi} has no transaction of the account at nonce ${nonce}` };
  return { kind: 'held', hash: tx.hash, block: hi };
}
