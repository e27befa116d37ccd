// Looking a recorded transaction up on the chain, with the three answers kept apart: a receipt (under
// any hash it was ever broadcast with), "the node has none" and "the lookup failed". Behind a provider
// whose backends lag, "none" only means this backend has not seen it yet: neither answer is evidence
// that the transaction was dropped (see nonce-holder.ts for what is).
import { formatTransactionReceipt, type Hex, type PublicClient, type RpcTransactionReceipt, type TransactionReceipt } from 'viem';
import type { ChainTxRow } from './outcomes.js';
import { errMessage } from './node-answers.js';

export type ReceiptLookup = { kind: 'found'; receipt: TransactionReceipt } | { kind: 'none' } | { kind: 'unknown'; error: string };

/** Every hash a transaction was broadcast with: its current one and those it had before each replacement. */
export function hashesOf(row: Pick<ChainTxRow, 'hash' | 'prior_hashes'>): Hex[] {
  // The current hash is also among the prior ones when an earlier version was mined (its hash is then the row's).
  return [...new Set([row.hash as Hex, ...(JSON.parse(row.prior_hashes) as Hex[])])];
}

/** The receipt under any of the transaction's hashes; `none` only when every lookup answered null. */
export async function lookUpReceipt(client: PublicClient, row: Pick<ChainTxRow, 'hash' | 'prior_hashes'>): Promise<ReceiptLookup> {
  let error: string | null = null;
  for (const hash of hashesOf(row)) {
    try {
      const receipt = (await client.request({ method: 'eth_getTransactionReceipt', params: [hash] })) as RpcTransactionReceipt | null;
      if (receipt) return { kind: 'found', receipt: formatTransactionReceipt(receipt) };
    } catch (err) {
      error ??= errMessage(err);
    }
  }
  return error === null ? { kind: 'none' } : { kind: 'unknown', error };
}

/** The receipt, or null for both "none" and "unknown" (where only a receipt matters). */
export async function receiptOrNull(client: PublicClient, row: Pick<ChainTxRow, 'hash' | 'prior_hashes'>): Promise<TransactionReceipt | null> {
  const r = await lookUpReceipt(client, row);
  return r.kind === 'found' ? r.receipt : null;
}
