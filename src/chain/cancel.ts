// An operator's Cancel of a transaction that is stuck or waiting: its recorded bytes are replaced by a
// 0-value transfer from the account to itself at the same nonce, with higher fees, so the nonce is
// filled (later transactions of the account are not held up) and the original call can no longer be
// mined. The row keeps every hash it had, so whichever version the chain mines is found: the original
// (too late to cancel: it counts as done) or the self-transfer, which the sender applies as a failure
// with CANCELLED_REASON, so the job ends failed, not retried.
//
// The row is marked (`error` = CANCELLED_REASON while it waits) so that a self-transfer the sender itself
// puts at a nonce (to fill a nonce the node keeps refusing, whose job is then tried again) is not taken
// for the operator's Cancel: only a marked row mined as a self-transfer ends as cancelled.
import { parseTransaction, type Hex, type TransactionReceipt } from 'viem';
import type { ChainSigner } from './signer.js';
import type { ChainTxRow } from './outcomes.js';
import { signTransaction } from './signing.js';

export const CANCELLED_REASON = 'cancelled by the operator';

/** Kinds a Cancel may not touch: deployments fix contract addresses by the deployer's nonce. */
export const UNCANCELLABLE_KINDS: ReadonlySet<string> = new Set(['forwarder.deploy', 'collection.deploy', 'reward.deploy']);

/** Whether a receipt is of a transfer from an account to itself (what a cancellation is). */
export function isCancellation(receipt: TransactionReceipt): boolean {
  return !!receipt.to && receipt.to.toLowerCase() === receipt.from.toLowerCase();
}

/** Whether the operator cancelled this transaction and the chain mined the cancellation. */
export function cancelledByOperator(row: Pick<ChainTxRow, 'error'>, receipt: TransactionReceipt): boolean {
  return row.error === CANCELLED_REASON && isCancellation(receipt);
}

/** A replacement must raise both fees by at least 10 % (nodes' rule): 12.5 % and one wei. */
const raise = (v: bigint) => (v * 1125n) / 1000n + 1n;
const max = (a: bigint, b: bigint) => (a > b ? a : b);

export interface CurrentFees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/** The fees of a cancellation of `raw`: both raised from the original's, or today's when higher. */
export function cancelFees(raw: Hex, current: CurrentFees): CurrentFees {
  const old = parseTransaction(raw);
  return {
    maxFeePerGas: max(raise(old.maxFeePerGas ?? old.gasPrice ?? 0n), current.maxFeePerGas),
    maxPriorityFeePerGas: max(raise(old.maxPriorityFeePerGas ?? old.gasPrice ?? 0n), current.maxPriorityFeePerGas),
  };
}

/** Signs the cancellation of a recorded transaction (same account and nonce). */
export async function signCancellation(
  signer: ChainSigner,
  row: Pick<ChainTxRow, 'chain_id' | 'nonce' | 'raw'>,
  current: CurrentFees,
): Promise<{ raw: Hex; hash: Hex; fees: CurrentFees }> {
  const fees = cancelFees(row.raw as Hex, current);
  const { raw, hash } = await signTransaction(signer, {
    type: 'eip1559',
    chainId: row.chain_id,
    nonce: row.nonce,
    to: signer.address,
    data: '0x',
    gas: 21_000n,
    value: 0n,
    ...fees,
  });
  return { raw, hash, fees };
}
