// ERC-721 Transfer logs read straight from `eth_getLogs`. A burst of mints is thousands of logs per
// range, and a general ABI decoder spends most of its time checksumming addresses (a keccak each) that
// the indexer only compares in lower case; the three indexed arguments are plain topic slices.
import { toEventSelector, toHex, type Address, type Hex } from 'viem';

/** keccak256("Transfer(address,address,uint256)"): the same topic as ERC-20's Transfer, told apart by topic count. */
export const TRANSFER_TOPIC = toEventSelector('Transfer(address,address,uint256)');

export interface TransferLog {
  /** The collection contract, lower case. */
  address: Address;
  from: Address;
  to: Address;
  tokenId: bigint;
  blockNumber: bigint;
}

export interface RpcLog {
  address: Hex;
  topics: Hex[];
  blockNumber: Hex | null;
  transactionHash?: Hex | null;
  removed?: boolean;
}

/** The `eth_getLogs` filter for the Transfer logs of `addresses` in blocks [from, to]. */
export function transferFilter(addresses: readonly string[], from: bigint, to: bigint) {
  return { address: addresses.map((a) => a.toLowerCase() as Address), topics: [TRANSFER_TOPIC], fromBlock: toHex(from), toBlock: toHex(to) };
}

/**
 * ERC-721 Transfers among `logs`, in order. ERC-20 Transfers (three topics: the amount is in the data)
 * and logs a reorg removed are not ERC-721 transfers and are left out.
 */
export function decodeTransferLogs(logs: readonly RpcLog[]): TransferLog[] {
  const out: TransferLog[] = [];
  for (const l of logs) {
    if (l.removed || l.topics.length !== 4 || l.topics[0].toLowerCase() !== TRANSFER_TOPIC) continue;
    out.push({
      address: l.address.toLowerCase() as Address,
      from: topicAddress(l.topics[1]),
      to: topicAddress(l.topics[2]),
      tokenId: BigInt(l.topics[3]),
      blockNumber: l.blockNumber === null ? 0n : BigInt(l.blockNumber),
    });
  }
  return out;
}

/** An address argument's topic: 32 bytes, the address in the low 20. */
function topicAddress(topic: Hex): Address {
  return `0x${topic.slice(26).toLowerCase()}` as Address;
}
