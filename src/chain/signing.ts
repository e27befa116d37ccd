// Transaction signing and hashing for the chain sender. A mint batch's transaction carries tens of
// kilobytes of calldata; it is serialized twice and hashed twice (to sign it, then for its hash), inside
// the database transaction that records it (on SQLite, under the write lock the API waits for). viem's
// JavaScript keccak takes milliseconds for each hash and its RLP encoder works on hex strings; here the
// hash is a WebAssembly keccak-256 (~25x faster) and the EIP-1559 envelope is encoded with Buffers, and
// its head read back the same way. Results are byte for byte those of viem's `signTransaction`,
// `keccak256` and `parseTransaction` (a unit test holds them side by side).
import { createKeccak, type IHasher } from 'hash-wasm';
import { parseSignature, type Address, type Hex } from 'viem';
import type { ChainSigner } from './signer.js';

/** The EIP-1559 transactions the sender signs (no access list: it never uses one). */
export interface Eip1559Tx {
  type: 'eip1559';
  chainId: number;
  nonce: number;
  to?: Address | null;
  data: Hex;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  value: bigint;
}

let hasher: Promise<IHasher> | null = null;

/** The WebAssembly keccak, instantiated once per thread. */
function keccakHasher(): Promise<IHasher> {
  hasher ??= createKeccak(256);
  return hasher;
}

/** keccak-256 of hex-encoded bytes, as viem's `keccak256(hex)`. */
export async function keccakHex(data: Hex): Promise<Hex> {
  const h = await keccakHasher();
  // The hasher is used synchronously from init to digest, so calls on one thread never interleave.
  h.init();
  h.update(Buffer.from(data.slice(2), 'hex'));
  return `0x${h.digest('hex')}`;
}

// ------------------------------------------------------------------------------------------- RLP

/** The RLP header of a string (0x80) or list (0xc0) of `length` bytes. */
function rlpHeader(length: number, offset: 0x80 | 0xc0): Buffer {
  if (length <= 55) return Buffer.from([offset + length]);
  const len = uintBytes(BigInt(length));
  return Buffer.concat([Buffer.from([offset + 55 + len.length]), len]);
}

function rlpString(b: Buffer): Buffer {
  if (b.length === 1 && b[0] < 0x80) return b;
  return Buffer.concat([rlpHeader(b.length, 0x80), b]);
}

/** A non-negative integer as RLP wants it: big-endian, no leading zero bytes; zero is empty. */
function uintBytes(n: bigint | number): Buffer {
  if (BigInt(n) < 0n) throw new Error('negative integer in a transaction field');
  let hex = BigInt(n).toString(16);
  if (hex === '0') return Buffer.alloc(0);
  if (hex.length % 2) hex = `0${hex}`;
  return Buffer.from(hex, 'hex');
}

function hexBytes(h: Hex | string, what: string): Buffer {
  const b = Buffer.from(h.slice(2), 'hex');
  // Buffer.from stops at the first character that is not hex: a short result means a bad input.
  if (!h.startsWith('0x') || h.length % 2 !== 0 || b.length !== (h.length - 2) / 2) throw new Error(`${what} is not hex bytes`);
  return b;
}

/** 0x02 || rlp([chainId, nonce, maxPriorityFee, maxFee, gas, to, value, data, accessList, (yParity, r, s)]). */
export function serializeEip1559(tx: Eip1559Tx, signature?: { yParity: number; r: Hex; s: Hex }): Hex {
  if (tx.to && hexBytes(tx.to, 'to').length !== 20) throw new Error('to is not an address');
  const fields = [
    uintBytes(tx.chainId),
    uintBytes(tx.nonce),
    uintBytes(tx.maxPriorityFeePerGas),
    uintBytes(tx.maxFeePerGas),
    uintBytes(tx.gas),
    tx.to ? hexBytes(tx.to, 'to') : Buffer.alloc(0),
    uintBytes(tx.value),
    hexBytes(tx.data, 'data'),
  ].map(rlpString);
  fields.push(Buffer.from([0xc0])); // empty access list
  if (signature) fields.push(...[uintBytes(signature.yParity), uintBytes(BigInt(signature.r)), uintBytes(BigInt(signature.s))].map(rlpString));
  const body = Buffer.concat(fields);
  return `0x02${Buffer.concat([rlpHeader(body.length, 0xc0), body]).toString('hex')}`;
}

/**
 * The fees and gas limit of EIP-1559 signed bytes (as serializeEip1559 writes them), read from the head
 * of their RLP list. A mint batch's calldata after them is tens of kilobytes, which a full parse decodes
 * (milliseconds for each transaction the tracker sees mined). Null for anything else (another type, a
 * malformed head): the caller parses it in full.
 */
export function eip1559Head(raw: Hex): { maxPriorityFeePerGas: bigint; maxFeePerGas: bigint; gas: bigint } | null {
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

/** An EIP-1559 transaction signed by `account`: its raw bytes and its hash. */
export async function signTransaction(account: ChainSigner, tx: Eip1559Tx): Promise<{ raw: Hex; hash: Hex }> {
  const signature = parseSignature(await account.sign({ hash: await keccakHex(serializeEip1559(tx)) }));
  const raw = serializeEip1559(tx, { yParity: signature.yParity!, r: signature.r, s: signature.s });
  return { raw, hash: await keccakHex(raw) };
}
