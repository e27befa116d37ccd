// Secrets at rest (API secrets, the wallet seed, webhook secrets) are sealed with AES-256-GCM under the
// operator's MASTER_KEY. The format is versioned so the key can be rotated later.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export class SecretBox {
  private readonly key: Buffer;
  constructor(keyHex: string) {
    this.key = Buffer.from(keyHex, 'hex');
    if (this.key.length !== 32) throw new Error('MASTER_KEY must be 32 bytes (64 hex characters)');
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return `v1:${iv.toString('base64')}:${c.getAuthTag().toString('base64')}:${body.toString('base64')}`;
  }

  open(sealed: string): string {
    const [v, iv, tag, body] = sealed.split(':');
    if (v !== 'v1' || !iv || !tag || body === undefined) throw new Error('unknown sealed secret format');
    const d = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    d.setAuthTag(Buffer.from(tag, 'base64'));
    try {
      return Buffer.concat([d.update(Buffer.from(body, 'base64')), d.final()]).toString('utf8');
    } catch {
      throw new Error('cannot decrypt a stored secret: MASTER_KEY differs from the one the data was written with');
    }
  }
}
