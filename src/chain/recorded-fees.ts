// What a recorded transaction offers (fees) and may use (gas limit), read from its signed bytes: the
// row keeps only the bytes, and both the in-flight limits and the repricing need these numbers.
import { parseTransaction, type Hex } from 'viem';
import type { Fees } from '../domain/fees.js';
import type { SignedTx } from './outcomes.js';

/** Kept per hash: a hash's signed bytes never change, and the tracker asks for them every pass. */
const parsedFees = new Map<string, Fees & { gas: bigint }>();

/** What a recorded transaction offers, and its gas limit. */
export function feesOf(row: SignedTx): Fees & { gas: bigint } {
  let f = parsedFees.get(row.hash);
  if (!f) {
    const t = parseTransaction(row.raw as Hex);
    f = { maxFeePerGas: t.maxFeePerGas ?? t.gasPrice ?? 0n, maxPriorityFeePerGas: t.maxPriorityFeePerGas ?? t.gasPrice ?? 0n, gas: t.gas ?? 0n };
    if (parsedFees.size > 10_000) parsedFees.clear();
    parsedFees.set(row.hash, f);
  }
  return f;
}

/** A recorded transaction's gas limit. */
export function gasOf(row: SignedTx): bigint {
  return feesOf(row).gas;
}
