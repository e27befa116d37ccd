// Where asset images and metadata documents are kept (docs/architecture.md, Metadata):
//  - development Apps: the service's own content-addressed file store, DATA_DIR/files, served at
//    PUBLIC_URL/files/<sha256>;
//  - production Apps: UnixFS blocks in DATA_DIR/ipfs/blocks, served by the read-only path gateway at
//    PUBLIC_URL/ipfs/<cid> and, when configured, published to a Kubo node and/or a pinning service.
// Both are immutable: a name is the hash of its content, so edits produce new names, never new content
// under an old name, and anything may be cached forever.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/config.js';
import { PRIVATE_DIR, PRIVATE_FILE } from '../util/private-dir.js';
import { addBytes, catFile, FsBlockstore } from './unixfs.js';
import type { CID } from 'multiformats/cid';

export const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';

export const isSha256Hex = (s: string): boolean => /^[0-9a-f]{64}$/.test(s);

/** Files named by the hex sha-256 of their bytes, fanned out by the first two hex digits. */
export class FileStore {
  constructor(readonly dir: string) {}

  pathOf(sha: string): string {
    return path.join(this.dir, sha.slice(0, 2), sha);
  }

  async put(bytes: Uint8Array): Promise<string> {
    const sha = crypto.createHash('sha256').update(bytes).digest('hex');
    const file = this.pathOf(sha);
    if (fs.existsSync(file)) return sha;
    await fs.promises.mkdir(path.dirname(file), { recursive: true, mode: PRIVATE_DIR });
    // Temp file + rename: a reader never sees a half-written file under its final name.
    const tmp = `${file}.tmp-${process.pid}-${crypto.randomBytes(6).toString('hex')}`;
    await fs.promises.writeFile(tmp, bytes, { flag: 'wx', mode: PRIVATE_FILE });
    await fs.promises.rename(tmp, file);
    return sha;
  }

  /** The file's bytes when they exist and still hash to their name; null otherwise. */
  async get(sha: string): Promise<Buffer | null> {
    if (!isSha256Hex(sha)) return null;
    let bytes: Buffer;
    try {
      bytes = await fs.promises.readFile(this.pathOf(sha));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    return crypto.createHash('sha256').update(bytes).digest('hex') === sha ? bytes : null;
  }
}

export interface MetadataStorage {
  files: FileStore;
  blocks: FsBlockstore;
  /** Adds a file to the blockstore; returns its CIDv1 (what `ipfs add --cid-version 1` gives). */
  addToIpfs(bytes: Uint8Array): Promise<CID>;
  catIpfs(cid: CID, maxBytes?: number): Promise<Buffer>;
}

const cache = new Map<string, MetadataStorage>();

/** One storage per DATA_DIR (the HTTP routes and the workers share it). */
export function metadataStorage(config: Pick<Config, 'dataDir'>): MetadataStorage {
  let s = cache.get(config.dataDir);
  if (!s) {
    const files = new FileStore(path.join(config.dataDir, 'files'));
    const blocks = new FsBlockstore(path.join(config.dataDir, 'ipfs', 'blocks'));
    s = {
      files,
      blocks,
      addToIpfs: (bytes) => addBytes(blocks, bytes),
      catIpfs: (cid, maxBytes) => catFile(blocks, cid, maxBytes),
    };
    cache.set(config.dataDir, s);
  }
  return s;
}
