// Gasless user actions (ERC-2771): the user's own HD key signs an EIP-712 ForwardRequest, a relayer
// submits it to MintworksForwarder (OpenZeppelin ERC2771Forwarder), and the target contract sees the
// user as `_msgSender()`. The token only moves with the owner's signature; users never hold gas.
//
// Requests go through `executeBatch` with a refund receiver: then a request whose inner call fails
// still consumes its nonce (reported by ExecutedForwardRequest(success=false)) instead of reverting
// the transaction, so one failing request never blocks the user's next nonces. A request with a wrong
// nonce is skipped without an event; the caller sees "not executed" and re-signs with a fresh nonce.
import { encodeFunctionData, parseEventLogs, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import type { ChainSigner } from './signer.js';
import type { Tx } from '../store/db.js';
import { artifact } from './artifacts.js';

export interface ForwardRequestData {
  from: Address;
  to: Address;
  value: bigint;
  gas: bigint;
  deadline: number;
  data: Hex;
  signature: Hex;
}

/** The EIP-712 types of MintworksForwarder's ForwardRequest (OpenZeppelin's ERC2771Forwarder). */
export const FORWARD_REQUEST_TYPES = {
  ForwardRequest: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'gas', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint48' },
    { name: 'data', type: 'bytes' },
  ],
} as const;

/** The EIP-712 domain of the forwarder at `forwarder` on `chainId`. */
export const forwarderDomain = (chainId: number, forwarder: Address) =>
  ({ name: 'MintworksForwarder', version: '1', chainId, verifyingContract: forwarder }) as const;

export async function signForwardRequest(
  user: ChainSigner,
  forwarder: Address,
  chainId: number,
  req: { to: Address; data: Hex; gas: bigint; nonce: bigint; deadline: number },
): Promise<ForwardRequestData> {
  const message = { from: user.address, to: req.to, value: 0n, gas: req.gas, nonce: req.nonce, deadline: req.deadline, data: req.data };
  const signature = await user.signTypedData({
    domain: forwarderDomain(chainId, forwarder),
    types: FORWARD_REQUEST_TYPES,
    primaryType: 'ForwardRequest',
    message,
  });
  return { from: user.address, to: req.to, value: 0n, gas: req.gas, deadline: req.deadline, data: req.data, signature };
}

/** Calldata for MintworksForwarder.executeBatch(requests, refundReceiver). */
export function encodeForwardBatch(requests: ForwardRequestData[], refundReceiver: Address): Hex {
  return encodeFunctionData({ abi: artifact('MintworksForwarder').abi, functionName: 'executeBatch', args: [requests, refundReceiver] });
}

/** Gas for a relayed batch: the inner gas of each request plus forwarder overhead. */
export function forwardBatchGas(requests: ForwardRequestData[]): bigint {
  return requests.reduce((sum, r) => sum + r.gas + 40_000n, 60_000n);
}

/** Per signer (lower case) and nonce: whether the forwarded call succeeded. Absent = not executed. */
export function forwardResults(receipt: TransactionReceipt, forwarder: Address): Map<string, boolean> {
  const out = new Map<string, boolean>();
  if (receipt.status !== 'success') return out;
  for (const log of parseEventLogs({ abi: artifact('MintworksForwarder').abi, logs: receipt.logs, eventName: 'ExecutedForwardRequest' })) {
    if (log.address.toLowerCase() !== forwarder.toLowerCase()) continue;
    const a = log.args as unknown as { signer: Address; nonce: bigint; success: boolean };
    out.set(`${a.signer.toLowerCase()}:${a.nonce}`, a.success);
  }
  return out;
}

/**
 * The forwarder's nonce of `signer` as the chain holds it: the next request it will execute. `blockNumber`:
 * as of that block (a receipt's: a lagging backend cannot answer from before it); latest without one.
 */
export async function forwarderNonceAt(client: PublicClient, forwarder: Address, signer: Address, blockNumber?: bigint): Promise<bigint> {
  const abi = artifact('MintworksForwarder').abi;
  return (await client.readContract({ address: forwarder, abi, functionName: 'nonces', args: [signer], blockNumber })) as bigint;
}

/**
 * The next forwarder nonce of a user on a chain, from the database (so concurrent actions of one user get
 * consecutive nonces), starting from the chain's count the first time.
 */
export async function allocateForwarderNonce(tx: Tx, chainId: number, user: Address, readChainNonce: () => Promise<bigint>): Promise<bigint> {
  const address = user.toLowerCase();
  const row = await tx
    .updateTable('forwarder_nonces')
    .set((eb) => ({ next_nonce: eb('next_nonce', '+', 1), updated_at: Date.now() }))
    .where('chain_id', '=', chainId)
    .where('address', '=', address)
    .returning('next_nonce')
    .executeTakeFirst();
  if (row) return BigInt(row.next_nonce) - 1n;
  const start = await readChainNonce();
  // Another transaction may have counted this user's first nonce meanwhile (two batches of one user's
  // actions): its count then goes on, as the update above would have, instead of failing on the key.
  const counted = await tx
    .insertInto('forwarder_nonces')
    .values({ chain_id: chainId, address, next_nonce: Number(start) + 1, updated_at: Date.now() })
    .onConflict((oc) =>
      oc.columns(['chain_id', 'address']).doUpdateSet((eb) => ({ next_nonce: eb('forwarder_nonces.next_nonce', '+', 1), updated_at: Date.now() })),
    )
    .returning('next_nonce')
    .executeTakeFirstOrThrow();
  return BigInt(counted.next_nonce) - 1n;
}

/** After a request was skipped (wrong nonce), start again from the chain's count. */
export async function resyncForwarderNonce(tx: Tx, chainId: number, user: Address, chainNonce: bigint): Promise<void> {
  await tx
    .updateTable('forwarder_nonces')
    .set({ next_nonce: Number(chainNonce), updated_at: Date.now() })
    .where('chain_id', '=', chainId)
    .where('address', '=', user.toLowerCase())
    .execute();
}
