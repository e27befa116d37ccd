// A chain account whose secp256k1 key lives in the HSM: the token signs the 32-byte hash (CKM_ECDSA,
// r || s); here s is brought into the lower half of the curve order (Ethereum refuses the other half)
// and the recovery id is found by recovering the address: the signature's point R is computed from
// the hash and our public key (the verification equation, R = (z·G + r·Q) / s) and its y parity is the
// recovery id; recovering from that id must give our address, which is checked before it is used.
// (Recovering once per candidate id costs two full recoveries; this costs one multiplication with a
// precomputed table for Q, so signing stays about as cheap as the token's C_Sign.)
import { secp256k1 } from '@noble/curves/secp256k1';
import { invert, mod } from '@noble/curves/abstract/modular';
import { hashTypedData, keccak256, serializeSignature, toHex, type Address, type Hex, type TypedDataDefinition } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import type { ChainSigner } from '../chain/signer.js';
import type { EcKeyRef, Hsm } from './hsm.js';

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_N = N >> 1n;

const Point = secp256k1.ProjectivePoint;

/** r and s of a raw 64-byte CKM_ECDSA signature, s normalised to the lower half (EIP-2). */
export function lowS(raw: Buffer): { r: bigint; s: bigint; flipped: boolean } {
  if (raw.length !== 64) throw new Error(`CKM_ECDSA gave ${raw.length} bytes, not 64 (r || s)`);
  const r = BigInt(`0x${raw.subarray(0, 32).toString('hex')}`);
  const s = BigInt(`0x${raw.subarray(32).toString('hex')}`);
  if (r <= 0n || r >= N || s <= 0n || s >= N) throw new Error('CKM_ECDSA gave a signature out of range');
  return s > HALF_N ? { r, s: N - s, flipped: true } : { r, s, flipped: false };
}

/**
 * The y parity of the point R of signature (r, s) over hash `z` by public key `q`, after s was
 * normalised (negating s negates R): the recovery id. Null when R is not where r says (not our key).
 */
export function recoveryId(q: InstanceType<typeof Point>, z: bigint, r: bigint, sRaw: bigint, flipped: boolean): 0 | 1 | null {
  const w = invert(sRaw, N);
  const R = Point.BASE.multiply(mod(z * w, N) || N).add(q.multiply(mod(r * w, N)));
  const { x, y } = R.toAffine();
  if (mod(x, N) !== r) return null;
  const parity = Number(y & 1n) as 0 | 1;
  return (flipped ? 1 - parity : parity) as 0 | 1;
}

/** The address of an uncompressed public key (04 || x || y). */
export const addressOfPublicKey = (pub: Buffer): Address => publicKeyToAddress(toHex(pub));

export class HsmSigner implements ChainSigner {
  readonly address: Address;
  private readonly publicKey: Hex;
  private readonly point: InstanceType<typeof Point>;
  private readonly key: Buffer;

  constructor(
    private readonly hsm: Hsm,
    readonly label: string,
    ref: EcKeyRef,
  ) {
    this.publicKey = toHex(ref.publicKey);
    this.address = publicKeyToAddress(this.publicKey);
    this.key = hsm.privateKey(ref.id);
    this.point = Point.fromHex(ref.publicKey.toString('hex'));
    // A window table for this key: its multiplication in recoveryId becomes cheap.
    this.point._setWindowSize(8);
  }

  async sign({ hash }: { hash: Hex }): Promise<Hex> {
    const raw = this.hsm.signDigest(this.key, Buffer.from(hash.slice(2), 'hex'));
    const { r, s, flipped } = lowS(raw);
    const yParity = recoveryId(this.point, BigInt(hash), r, BigInt(`0x${raw.subarray(32).toString('hex')}`), flipped);
    if (yParity === null) throw new Error(`the HSM key "${this.label}" gave a signature that is not of its public key`);
    return serializeSignature({ r: toHex(r, { size: 32 }), s: toHex(s, { size: 32 }), yParity });
  }

  signTypedData = (async (td: TypedDataDefinition) => this.sign({ hash: hashTypedData(td) })) as ChainSigner['signTypedData'];

  /** An EIP-191 personal message (for operators proving control of an account). */
  async signMessage(message: string): Promise<Hex> {
    const bytes = Buffer.from(message, 'utf8');
    return this.sign({ hash: keccak256(Buffer.concat([Buffer.from(`\x19Ethereum Signed Message:\n${bytes.length}`), bytes])) });
  }
}
