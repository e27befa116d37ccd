// UnixFS files with exactly the CIDs `ipfs add --cid-version 1` gives (Kubo's default recipe with CIDv1):
// raw leaves, sha2-256, fixed 256 KiB chunks, balanced DAG of at most 174 links per node, and a file of one
// chunk is that chunk's raw-leaf CID (`bafkrei…`). A different option here would silently give a CID no
// other IPFS node agrees with, so the options are spelled out instead of relying on library defaults
// (which changed across importer versions: IPIP-499 profiles).
//
// Blocks live in a small content-addressed blockstore on the filesystem (DATA_DIR/ipfs/blocks). Every
// block read back is re-hashed against its CID, so a damaged or planted file is never served as content.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { importBytes, type ImporterOptions } from 'ipfs-unixfs-importer';
import { fixedSize } from 'ipfs-unixfs-importer/chunker';
import { balanced } from 'ipfs-unixfs-importer/layout';
import { UnixFS } from 'ipfs-unixfs';
// @ipld/dag-pb is installed as a dependency of ipfs-unixfs-importer (same major it encodes with).
import * as dagPb from '@ipld/dag-pb';
import { CID } from 'multiformats/cid';
import { PRIVATE_DIR, PRIVATE_FILE } from '../util/private-dir.js';
import * as raw from 'multiformats/codecs/raw';

export const CHUNK_SIZE = 262_144;
export const MAX_LINKS = 174;
const SHA2_256 = 0x12;

/** `ipfs add --cid-version 1` (Kubo's defaults, before any IPIP-499 profile). */
export const KUBO_CIDV1_OPTIONS: ImporterOptions = {
  cidVersion: 1,
  rawLeaves: true,
  reduceSingleLeafToSelf: true,
  wrapWithDirectory: false,
  chunker: fixedSize({ chunkSize: CHUNK_SIZE }),
  layout: balanced({ maxChildrenPerNode: MAX_LINKS }),
};

/** Where blocks go: put is the only thing the importer needs. */
export interface BlockSink {
  put(cid: CID, bytes: Uint8Array): Promise<unknown>;
}

/** The importer's blockstore parameter, adapted: it only ever passes whole blocks. */
function sinkAdapter(sink: BlockSink) {
  return {
    async put(cid: CID, val: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<CID> {
      if (!(val instanceof Uint8Array)) throw new Error('unexpected streamed block from the importer');
      await sink.put(cid, val);
      return cid;
    },
  };
}

const discard: BlockSink = { put: async () => undefined };

/** The CID `ipfs add --cid-version 1` gives these bytes, without storing anything. */
export async function cidOfBytes(bytes: Uint8Array): Promise<CID> {
  return (await importBytes(bytes, sinkAdapter(discard), KUBO_CIDV1_OPTIONS)).cid;
}

/** Parses a CID string (v0 `Qm…`, or v1 in base32 `b…` / base58btc `z…`) into its v1 form; null when invalid. */
export function parseCid(s: string): CID | null {
  try {
    const cid = CID.parse(s);
    return cid.version === 0 ? cid.toV1() : cid;
  } catch {
    // v1 in a base other than base32/base58btc (e.g. base36 `k…`) needs its decoder; not used here.
    return null;
  }
}

export class BlockCorruptError extends Error {
  constructor(readonly cid: string) {
    super(`block ${cid} does not match its hash`);
    this.name = 'BlockCorruptError';
  }
}

export class BlockNotFoundError extends Error {
  constructor(readonly cid: string) {
    super(`block ${cid} is not in the blockstore`);
    this.name = 'BlockNotFoundError';
  }
}

/** True when `bytes` hash to the CID's sha2-256 multihash. Other hash functions are never ours: false. */
export function blockMatches(cid: CID, bytes: Uint8Array): boolean {
  if (cid.multihash.code !== SHA2_256) return false;
  const digest = crypto.createHash('sha256').update(bytes).digest();
  return Buffer.compare(digest, Buffer.from(cid.multihash.digest)) === 0;
}

/**
 * Blocks as files named by their CIDv1 string, fanned out over 1024 directories (like Kubo's flatfs
 * `next-to-last/2`, so no directory grows huge). Content-addressed, hence idempotent: writing a block
 * that exists is a no-op, and concurrent writers of the same block write the same bytes.
 */
export class FsBlockstore implements BlockSink {
  constructor(readonly dir: string) {}

  pathOf(cid: CID): string {
    const key = (cid.version === 0 ? cid.toV1() : cid).toString();
    return path.join(this.dir, key.slice(-3, -1), key);
  }

  async put(cid: CID, bytes: Uint8Array): Promise<void> {
    const file = this.pathOf(cid);
    if (fs.existsSync(file)) return;
    await fs.promises.mkdir(path.dirname(file), { recursive: true, mode: PRIVATE_DIR });
    // Temp file + rename: a crash mid-write leaves a stray temp file, never a truncated block under its name.
    const tmp = `${file}.tmp-${process.pid}-${crypto.randomBytes(6).toString('hex')}`;
    await fs.promises.writeFile(tmp, bytes, { flag: 'wx', mode: PRIVATE_FILE });
    await fs.promises.rename(tmp, file);
  }

  async has(cid: CID): Promise<boolean> {
    return fs.existsSync(this.pathOf(cid));
  }

  /** The block, verified against its CID. Throws BlockNotFoundError / BlockCorruptError. */
  async get(cid: CID): Promise<Uint8Array> {
    let bytes: Buffer;
    try {
      bytes = await fs.promises.readFile(this.pathOf(cid));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlockNotFoundError(cid.toString());
      throw err;
    }
    if (!blockMatches(cid, bytes)) throw new BlockCorruptError(cid.toString());
    return bytes;
  }
}

/** Adds a file; returns its CID (the same `ipfs add --cid-version 1` prints). */
export async function addBytes(store: BlockSink, bytes: Uint8Array): Promise<CID> {
  return (await importBytes(bytes, sinkAdapter(store), KUBO_CIDV1_OPTIONS)).cid;
}

export class NotAFileError extends Error {
  constructor(
    readonly cid: string,
    kind: string,
  ) {
    super(`${cid} is a UnixFS ${kind}, not a file`);
    this.name = 'NotAFileError';
  }
}

// catFile follows raw leaves and dag-pb UnixFS file nodes; nothing else is one of our files. The depth
// bound (174^16 chunks is far beyond any file) stops a crafted deep DAG; maxBytes stops a wide one (the
// same subtree linked many times).
const MAX_DEPTH = 16;

/**
 * The bytes of a UnixFS file: depth-first over the DAG, each block verified. `maxBytes` bounds memory
 * (the gateway serves files this service added, all under IMAGE_MAX_BYTES).
 */
export async function catFile(store: Pick<FsBlockstore, 'get'>, cid: CID, maxBytes = 256 * 1024 * 1024): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  let total = 0;
  const push = (b: Uint8Array) => {
    total += b.length;
    if (total > maxBytes) throw new Error(`file ${cid} is larger than ${maxBytes} bytes`);
    if (b.length) parts.push(b);
  };
  const walk = async (c: CID, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH) throw new Error(`file ${cid} is nested deeper than ${MAX_DEPTH} levels`);
    const block = await store.get(c);
    if (c.code === raw.code) return push(block);
    if (c.code !== dagPb.code) throw new NotAFileError(c.toString(), `block of codec 0x${c.code.toString(16)}`);
    const node = dagPb.decode(block);
    if (!node.Data) throw new NotAFileError(c.toString(), 'dag-pb node without UnixFS data');
    const fsNode = UnixFS.unmarshal(node.Data);
    if (fsNode.type !== 'file' && fsNode.type !== 'raw') throw new NotAFileError(c.toString(), fsNode.type);
    if (fsNode.data) push(fsNode.data); // a file node's own bytes come before its children's
    for (const link of node.Links) await walk(link.Hash, depth + 1);
  };
  await walk(cid, 0);
  return Buffer.concat(parts, total);
}
