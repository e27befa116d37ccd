// Users' actions relayed through the ERC-2771 forwarder (transfers and burns of assets and of items):
// each is signed with its holder's key as a forward request, at the holder's next forwarder nonce.
import type { Address, Hex } from 'viem';
import type { Tx } from '../../store/db.js';
import type { ChainCtx } from '../context.js';
import { allocateForwarderNonce, forwarderNonceAt, signForwardRequest, type ForwardRequestData } from '../../chain/forward.js';

/** A forward request signed less than this long ago is still valid on chain. */
const DEADLINE_SECONDS = 24 * 3600;

export interface ActionToForward<T> {
  /** What the outcome handler needs of the action, without its signer and nonce (added here). */
  item: T;
  userUid: string;
  to: Address;
  data: Hex;
}

/**
 * Signs each action at its holder's next forwarder nonce (allocated in `tx`, so a nonce is never given
 * twice), in order. The items carry their signer and nonce: how the outcome finds each request's verdict.
 */
export async function signForwardBatch<T extends object>(
  tx: Tx,
  ctx: ChainCtx,
  actions: readonly ActionToForward<T>[],
  gas: bigint,
): Promise<{ requests: ForwardRequestData[]; items: (T & { signer: string; nonce: string })[] }> {
  const { sender, forwarder } = ctx;
  const requests: ForwardRequestData[] = [];
  const items: (T & { signer: string; nonce: string })[] = [];
  for (const a of actions) {
    const user = ctx.keys.user(a.userUid);
    const nonce = await allocateForwarderNonce(tx, sender.chainId, user.address, () => forwarderNonceAt(sender.client, forwarder, user.address));
    const deadline = Math.floor(Date.now() / 1000) + DEADLINE_SECONDS;
    requests.push(await signForwardRequest(user, forwarder, ctx.chain.id, { to: a.to, data: a.data, gas, nonce, deadline }));
    items.push({ ...a.item, signer: user.address.toLowerCase(), nonce: nonce.toString() });
  }
  return { requests, items };
}
