// What a recorded transaction offers (fees) and may use (gas limit), read from its signed bytes: the
// row keeps only the bytes, and both the in-flight limits and the repricing need these numbers.
import { parseTransaction, type Hex } from 'viem';
import type { Fees } from '../domain/fees.js';
import type { SignedTx } from './outcomes.js';
import { eip1559Head } from './signing.js';

type FeesAndGas = Fees & { gas: bigint };

/** Kept per hash: a hash's signed bytes never change, and the tracker asks for them every pass. */
const parsedFees = new Map<string, FeesAndGas>();

/** What a recorded transaction offers, and its gas limit. */
export function feesOf(row: SignedTx): FeesAndGas {
  let f = parsedFees.get(row.hash);
  if (!f) {
    f = eip1559Head(row.raw as Hex) ?? parsedFully(row.raw as Hex);
    if (parsedFees.size > 10_000) parsedFees.clear();
    parsedFees.set(row.hash, f);
  }
  return f;
}

/** A recorded transaction's gas limit. */
export function gasOf(row: SignedTx): bigint {
  return feesOf(row).gas;
}

function parsedFully(raw: Hex): FeesAndGas {
  const t = parseTransaction(raw);
  return { maxFeePerGas: t.maxFeePerGas ?? t.gasPrice ?? 0n, maxPriorityFeePerGas: t.maxPriorityFeePerGas ?? t.gasPrice ?? 0n, gas: t.gas ?? 0n };
}
