// The forwarder (ERC-2771) of a chain: the deployer's first transaction there, so its address is known
// before it exists (CREATE from the deployer at nonce 0) and code at that address ends the bootstrap.
// Recorded once and broadcast; the tracker follows it like any transaction.
import { getContractAddress, type Address, type PublicClient } from 'viem';
import type { Db } from '../store/db.js';
import type { KeyRing } from './keys.js';
import type { ChainSender } from './sender.js';
import { FORWARDER_DEPLOY_TX } from './outcomes.js';
import { artifact } from './artifacts.js';
import { WrongChainError } from './chain-client.js';

export class ForwarderBootstrap {
  /** The forwarder's address: fixed by the deployer's first transaction, the same on every chain. */
  readonly address: Address;

  constructor(
    private readonly db: Db,
    private readonly keys: KeyRing,
    private readonly chainId: number,
  ) {
    this.address = getContractAddress({ from: keys.deployer().address, nonce: 0n });
  }

  async deployed(client: PublicClient): Promise<boolean> {
    return ((await client.getCode({ address: this.address })) ?? '0x') !== '0x';
  }

  /** Records and broadcasts the deployment, once; a deployer without funds leaves the chain waiting. */
  async deploy(client: PublicClient, sender: ChainSender): Promise<void> {
    const recorded = await this.db
      .selectFrom('chain_txs')
      .select('id')
      .where('kind', '=', FORWARDER_DEPLOY_TX)
      .where('chain_id', '=', this.chainId)
      .executeTakeFirst();
    if (recorded) return;
    const deployer = this.keys.deployer();
    const nonce = await client.getTransactionCount({ address: deployer.address });
    if (nonce !== 0)
      throw new WrongChainError(
        `the deployer account ${deployer.address} has been used on chain ${this.chainId} (nonce ${nonce}) but holds no forwarder: this chain does not belong to this installation's seed`,
      );
    if ((await client.getBalance({ address: deployer.address })) === 0n) return; // waits for funds
    const { bytecode } = artifact('MintworksForwarder');
    const row = await this.db
      .transaction()
      .execute((tx) =>
        sender.record(tx, { kind: FORWARDER_DEPLOY_TX, ref: 'forwarder', payload: {}, to: null, data: bytecode, gas: 3_000_000n, signer: deployer }),
      );
    await sender.broadcast([row]);
  }
}
