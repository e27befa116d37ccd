// Reads of a token's state that a failure path asks before it changes what the API says: who owns an
// ERC-721 token, or that it no longer exists. A revert of the contract is an answer (no such token);
// a node that does not answer is not, and throws (the caller tries again later).
import { BaseError, ContractFunctionRevertedError, parseAbi, type Address, type PublicClient } from 'viem';

const ownerOfAbi = parseAbi(['function ownerOf(uint256) view returns (address)']);

/** The token's owner (lower case), or null when the token does not exist (never minted, or burned). */
export async function ownerOrGone(client: PublicClient, contract: string, tokenId: number | bigint, blockNumber?: bigint): Promise<string | null> {
  try {
    const owner = await client.readContract({ address: contract as Address, abi: ownerOfAbi, functionName: 'ownerOf', args: [BigInt(tokenId)], blockNumber });
    return owner.toLowerCase();
  } catch (err) {
    if (err instanceof BaseError && err.walk((e) => e instanceof ContractFunctionRevertedError)) return null;
    throw err;
  }
}
