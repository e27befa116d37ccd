// Token URIs as MintworksCollection stores them. A production token's metadata document is an IPFS file
// whose CID is CIDv1, sha2-256, codec raw (a single-chunk file, `bafkrei…`) or dag-pb (a larger one,
// `bafybei…`); the contract keeps only the 32-byte digest plus one bit for the codec and rebuilds
// `ipfs://<CIDv1 base32>` in tokenURI. A token without a per-token document (development Apps) gets
// a zero digest and resolves to the collection's baseURI + id.
//
// Anything else cannot be stored, and a URI the contract would print differently than the service
// recorded it (CIDv0 `Qm…`, base58btc `z…`, a path after the CID, another hash) must not be minted:
// the token would point somewhere other than the asset says. Those throw instead of being converted.
import { encodeFunctionData, getAbiItem, isAddress, toFunctionSelector, toHex, zeroHash, type AbiFunction, type Address, type Hex } from 'viem';
import { CID } from 'multiformats/cid';
import * as Digest from 'multiformats/hashes/digest';
import * as raw from 'multiformats/codecs/raw';
import { artifact } from './artifacts.js';

const DAG_PB = 0x70;
const SHA2_256 = 0x12;
const IPFS_SCHEME = 'ipfs://';

/** The contract's arguments for one token's metadata: the CID's sha2-256 digest and whether its codec is dag-pb. */
export interface CidArg {
  /** zeroHash = no per-token document: baseURI + id. */
  digest: Hex;
  dagPb: boolean;
}

export interface MintItem {
  to: Address;
  tokenId: bigint | number;
  /** `ipfs://<CIDv1 base32>` of the document, or null/'' for baseURI + id. */
  tokenUri: string | null;
}

/**
 * The contract arguments that make tokenURI return exactly `tokenUri`. null or '' gives the zero
 * digest (baseURI + id). Throws for anything that is not `ipfs://` + a canonical (base32, lower case)
 * CIDv1 with codec raw or dag-pb and a sha2-256 multihash.
 */
export function cidArg(tokenUri: string | null): CidArg {
  if (tokenUri === null || tokenUri === '') return { digest: zeroHash, dagPb: false };
  const fail = (why: string): never => {
    throw new Error(`token URI ${JSON.stringify(tokenUri)} cannot be stored on chain: ${why} (expected ipfs://<CIDv1 base32, raw or dag-pb, sha2-256>)`);
  };
  if (!tokenUri.startsWith(IPFS_SCHEME)) fail('not an ipfs:// URI');
  const s = tokenUri.slice(IPFS_SCHEME.length);
  let cid: CID;
  try {
    cid = CID.parse(s);
  } catch {
    return fail('not a CID');
  }
  if (cid.version !== 1) fail('not a CIDv1');
  if (cid.code !== raw.code && cid.code !== DAG_PB) fail(`codec 0x${cid.code.toString(16)} is neither raw nor dag-pb`);
  if (cid.multihash.code !== SHA2_256 || cid.multihash.size !== 32) fail('the multihash is not sha2-256');
  // The contract always prints base32 lower case; any other spelling of the same CID would differ.
  if (cid.toString() !== s) fail(`not in canonical base32 form (${cid.toString()})`);
  const digest = toHex(cid.multihash.digest);
  // A zero digest means "no CID" on chain; no real document hashes to it, so refuse rather than mis-mint.
  if (digest === zeroHash) fail('zero digest');
  return { digest, dagPb: cid.code === DAG_PB };
}

/** The inverse of cidArg: the token URI the contract returns for these arguments (null = baseURI + id). */
export function tokenUriOf(arg: CidArg): string | null {
  if (arg.digest === zeroHash) return null;
  const bytes = Buffer.from(arg.digest.slice(2), 'hex');
  if (bytes.length !== 32) throw new Error(`digest ${arg.digest} is not 32 bytes`);
  return `${IPFS_SCHEME}${CID.createV1(arg.dagPb ? DAG_PB : raw.code, Digest.create(SHA2_256, bytes)).toString()}`;
}

let mintBatchSelector: string | null = null;
const MAX_UINT256 = (1n << 256n) - 1n;
/** An ABI word (64 hex digits) of a non-negative integer. */
const word = (n: bigint | number): string => n.toString(16).padStart(64, '0');

/**
 * Calldata of `mintBatch(address[] to, uint256[] ids, bytes32[] cids, bool[] dagPb)`. Throws like cidArg,
 * and for an address or id the ABI cannot hold (the address checked as viem's encoder checks it).
 * Written word by word: the four arrays are static elements after their offsets, and viem's generic
 * encoder took 0.8 ms for a batch of 400 tokens (0.2 this way), about 4 % of the workers' thread while
 * they drain a backlog (the unit test checks the two agree).
 */
export function mintBatchCalldata(items: readonly MintItem[]): Hex {
  mintBatchSelector ??= toFunctionSelector(getAbiItem({ abi: artifact('MintworksCollection').abi, name: 'mintBatch' }) as AbiFunction).slice(2);
  const n = items.length;
  const arrayWords = n + 1; // the length, then the elements
  const parts: string[] = [mintBatchSelector];
  for (let a = 0; a < 4; a++) parts.push(word((4 + a * arrayWords) * 32)); // each array's offset from the head's start
  const ids: string[] = [word(n)];
  const digests: string[] = [word(n)];
  const dagPb: string[] = [word(n)];
  parts.push(word(n));
  for (const item of items) {
    if (!isAddress(item.to)) throw new Error(`recipient ${JSON.stringify(item.to)} is not an address`);
    const id = BigInt(item.tokenId);
    if (id < 0n || id > MAX_UINT256) throw new Error(`token id ${id} is not a uint256`);
    const { digest, dagPb: pb } = cidArg(item.tokenUri);
    parts.push(`000000000000000000000000${item.to.slice(2).toLowerCase()}`);
    ids.push(word(id));
    digests.push(digest.slice(2));
    dagPb.push(word(pb ? 1 : 0));
  }
  return `0x${parts.join('')}${ids.join('')}${digests.join('')}${dagPb.join('')}`;
}

/** Calldata of `setTokenCID(uint256 id, bytes32 cid, bool dagPb)` (edits of editable collections). Throws like cidArg. */
export function setTokenCidCalldata(tokenId: bigint | number, tokenUri: string | null): Hex {
  const { digest, dagPb } = cidArg(tokenUri);
  return encodeFunctionData({
    abi: artifact('MintworksCollection').abi,
    functionName: 'setTokenCID',
    args: [BigInt(tokenId), digest, dagPb],
  });
}

// Gas limits from measurements on anvil (test/chain/contracts.test.ts prints them, and checks that every
// batch there, the worst cases included, stays within its limit). A token costs about the same in any
// batch (its owner slot, 22.1k, the Transfer log, its calldata): ~24-29k without a CID. What varies is
// paid once per batch: the first token for a recipient touches that recipient's balance slot (a fresh
// holder's costs 22.1k), and the first id of each 256 reads a word of the burned-id bitmap (and, for a
// dag-pb CID, writes a word of the codec bitmap, 22.1k when fresh). So the limit counts recipients and
// bitmap words once each, not once per token: a batch of hundreds for a few dozen players reserves what
// it will use plus a margin, instead of every token's worst case. Each figure is ~15-25% above what it
// measures.
const BATCH_OVERHEAD = 40_000; // intrinsic 21k, the operator check, calldata framing
const GAS_PER_TOKEN = 34_000;
const GAS_PER_HOLDER = 26_000; // a recipient's balance slot, the first time in the batch: cold, and fresh at worst
const GAS_PER_BURN_WORD = 3_000; // a word of the burned-id bitmap, read cold once per batch
const GAS_PER_CID = 28_000; // one fresh storage slot (22.1k) and the digest's calldata
const GAS_PER_CODEC_WORD = 26_000; // a word of the dag-pb codec bitmap, written once per batch, fresh at worst
const GAS_PER_DAG_PB = 1_000; // each later dag-pb token of a word: a warm write

/**
 * The gas limit of a mintBatch, item by item: what an item adds depends on the items before it in the
 * batch (a recipient or a bitmap word already touched costs little more).
 */
export class MintGasMeter {
  private gas = BATCH_OVERHEAD;
  private readonly holders = new Set<string>();
  private readonly burnWords = new Set<bigint>();
  private readonly codecWords = new Set<bigint>();

  /** The limit so far. */
  get total(): number {
    return this.gas;
  }

  /** What `item` would add to the limit. Throws like cidArg. */
  cost(item: MintItem): number {
    const { digest, dagPb } = cidArg(item.tokenUri);
    const word = BigInt(item.tokenId) >> 8n;
    let gas = GAS_PER_TOKEN;
    if (!this.holders.has(item.to.toLowerCase())) gas += GAS_PER_HOLDER;
    if (!this.burnWords.has(word)) gas += GAS_PER_BURN_WORD;
    if (digest !== zeroHash) gas += GAS_PER_CID;
    if (dagPb) gas += this.codecWords.has(word) ? GAS_PER_DAG_PB : GAS_PER_CODEC_WORD;
    return gas;
  }

  add(item: MintItem): void {
    this.gas += this.cost(item);
    const word = BigInt(item.tokenId) >> 8n;
    this.holders.add(item.to.toLowerCase());
    this.burnWords.add(word);
    if (cidArg(item.tokenUri).dagPb) this.codecWords.add(word);
  }
}

/** A gas limit for mintBatch of these items: generous (never runs out) but proportional. Throws like cidArg. */
export function mintGasFor(items: readonly MintItem[]): bigint {
  const meter = new MintGasMeter();
  for (const item of items) meter.add(item);
  return BigInt(meter.total);
}
