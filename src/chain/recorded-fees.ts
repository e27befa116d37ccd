// What a recorded transaction offers (fees) and may use (gas limit), read from its signed bytes: the
// row keeps only the bytes, and both the in-flight limits and the repricing need these numbers.
import { parseTransaction, type Hex } from 'viem';
import type { Fees } from '../domain/fees.js';
import type { SignedTx } from './outcomes.js';

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

/**
 * The fees and gas limit of EIP-1559 signed bytes, from the head of their RLP list: 0x02 ||
 * rlp([chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, gas, to, value, data, …]). A mint batch's
 * calldata after them is tens of kilobytes, which a full parse decodes (milliseconds for each
 * transaction the tracker sees mined). Null for anything else (another type, a malformed head): the
 * caller parses it in full.
 */
export function eip1559Head(raw: Hex): FeesAndGas | null {
  if (!raw.startsWith('0x02')) return null;
  // The list's header (at most 9 bytes) and five integers of at most 33 bytes each.
  const b = Buffer.from(raw.slice(4, 4 + 2 * 180), 'hex');
  const header = b[0];
  if (header === undefined || header < 0xc0) return null;
  let at = header <= 0xf7 ? 1 : 1 + (header - 0xf7);
  const fields: bigint[] = [];
  while (fields.length < 5) {
    const prefix = b[at];
    if (prefix === undefined || prefix > 0xa0) return null; // integers here are at most 32 bytes: anything else is not a fee field
    if (prefix < 0x80) {
      fields.push(BigInt(prefix));
      at += 1;
      continue;
    }
    const length = prefix - 0x80;
    if (at + 1 + length > b.length) return null;
    fields.push(length === 0 ? 0n : BigInt(`0x${b.subarray(at + 1, at + 1 + length).toString('hex')}`));
    at += 1 + length;
  }
  const [, , maxPriorityFeePerGas, maxFeePerGas, gas] = fields;
  return { maxPriorityFeePerGas, maxFeePerGas, gas };
}
