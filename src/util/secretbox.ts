// Secrets at rest (API secrets, the wallet seed, webhook secrets) are sealed with AES-256-GCM under a
// master key. Each sealed value names the key that sealed it, so the master key can be rotated while the
// service runs: a process that has loaded the new key opens values sealed with either, and the old key
// is dropped only once nothing sealed with it is left.
//   v1:<iv>:<tag>:<body>          sealed with the root key (MASTER_KEY / master.key) itself
//   v2:<key id>:<iv>:<tag>:<body> sealed with the master key of that id (src/custody/master-keys.ts)
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** The id `v1` values are sealed under: the operator's MASTER_KEY (or DATA_DIR/master.key). */
export const ROOT_KEY_ID = 'root';

export class UnknownSealingKeyError extends Error {}

export class SecretBox {
  private readonly keys = new Map<string, Buffer>();
  private current: string;

  /** `keyHex`: the root key (local custody); further keys come with `addKey`. */
  constructor(keyHex?: string) {
    this.current = ROOT_KEY_ID;
    if (keyHex !== undefined) this.addKey(ROOT_KEY_ID, Buffer.from(keyHex, 'hex'));
  }

  addKey(id: string, key: Buffer): void {
    if (key.length !== 32) throw new Error(id === ROOT_KEY_ID ? 'MASTER_KEY must be 32 bytes (64 hex characters)' : `master key ${id} is not 32 bytes`);
    if (!/^[A-Za-z0-9_-]{1,32}$/.test(id)) throw new Error(`bad master key id ${id}`);
    this.keys.set(id, key);
  }

  /** New values are sealed with the key `id` from now on (it must be loaded). */
  useKey(id: string): void {
    if (!this.keys.has(id)) throw new Error(`master key ${id} is not loaded`);
    this.current = id;
  }

  dropKey(id: string): void {
    if (id === this.current) throw new Error('the master key in use cannot be dropped');
    this.keys.delete(id);
  }

  get currentKeyId(): string {
    return this.current;
  }

  keyIds(): string[] {
    return [...this.keys.keys()];
  }

  has(id: string): boolean {
    return this.keys.has(id);
  }

  /** The id of the key a sealed value needs. */
  static keyIdOf(sealed: string): string {
    if (sealed.startsWith('v1:')) return ROOT_KEY_ID;
    if (sealed.startsWith('v2:')) return sealed.split(':')[1] ?? '';
    throw new Error('unknown sealed secret format');
  }

  seal(plain: string): string {
    const key = this.keys.get(this.current);
    if (!key) throw new Error('no master key loaded');
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', key, iv);
    const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    const tail = `${iv.toString('base64')}:${c.getAuthTag().toString('base64')}:${body.toString('base64')}`;
    return this.current === ROOT_KEY_ID ? `v1:${tail}` : `v2:${this.current}:${tail}`;
  }

  open(sealed: string): string {
    const parts = sealed.split(':');
    const [id, iv, tag, body] =
      parts[0] === 'v1' && parts.length === 4 ? [ROOT_KEY_ID, ...parts.slice(1)] : parts[0] === 'v2' && parts.length === 5 ? parts.slice(1) : [];
    if (!id || !iv || !tag || body === undefined) throw new Error('unknown sealed secret format');
    const key = this.keys.get(id);
    if (!key)
      throw new UnknownSealingKeyError(
        id === ROOT_KEY_ID
          ? 'cannot decrypt a stored secret: it is sealed with MASTER_KEY, which is not loaded'
          : `cannot decrypt a stored secret: it is sealed with master key ${id}, which this process has not loaded`,
      );
    const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
    d.setAuthTag(Buffer.from(tag, 'base64'));
    try {
      return Buffer.concat([d.update(Buffer.from(body, 'base64')), d.final()]).toString('utf8');
    } catch {
      throw new Error('cannot decrypt a stored secret: MASTER_KEY differs from the one the data was written with');
    }
  }
}
