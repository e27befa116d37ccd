// What the chain pipeline needs of an account that signs: its address, a signature over a 32-byte hash
// (transactions: src/chain/signing.ts) and EIP-712 typed data (forwarded requests). viem's local
// accounts (the HD-derived keys of local custody) have this shape, and so do the HSM's keys
// (src/custody/hsm-signer.ts), so the sender never knows where a key lives.
import type { Address, Hex, LocalAccount } from 'viem';

export interface ChainSigner {
  readonly address: Address;
  /** A 65-byte signature (r || s || v) over `hash`, s in the lower half of the curve order. */
  sign(args: { hash: Hex }): Promise<Hex>;
  signTypedData: LocalAccount['signTypedData'];
}
