// Console sessions kept by the server: a digest of each session id with its expiry, in the `meta`
// table, so every API process of an installation accepts it and signing out ends it everywhere at once.
// A session also names the operator token it was opened with: changing OPERATOR_TOKEN ends every session.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../store/db.js';

export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const KEY_PREFIX = 'console.session.';

const sha256 = (s: string) => createHash('sha256').update(s).digest();

export interface Session {
  expiresAt: number;
}

export class ConsoleSessions {
  private readonly tokenDigest: Buffer;
  private readonly tokenTag: string;

  constructor(
    private readonly db: Db,
    operatorToken: string | undefined,
    private readonly ttlMs = SESSION_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.tokenDigest = sha256(operatorToken ?? '');
    this.tokenTag = operatorToken ? sha256(`console-session:${operatorToken}`).toString('hex').slice(0, 16) : '';
  }

  /** True when `token` is the operator token (compared in constant time). */
  checkToken(token: string): boolean {
    return this.tokenTag !== '' && timingSafeEqual(sha256(token), this.tokenDigest);
  }

  async create(): Promise<{ id: string; expiresAt: number }> {
    await this.sweep();
    const id = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    await this.db
      .insertInto('meta')
      .values({ key: keyOf(id), value: `${expiresAt}:${this.tokenTag}` })
      .execute();
    return { id, expiresAt };
  }

  async verify(id: string | undefined): Promise<Session | null> {
    if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
    const row = await this.db.selectFrom('meta').select('value').where('key', '=', keyOf(id)).executeTakeFirst();
    if (!row) return null;
    const [exp, tag] = row.value.split(':');
    const expiresAt = Number(exp);
    if (tag !== this.tokenTag || !(expiresAt > this.now())) return null;
    return { expiresAt };
  }

  async destroy(id: string | undefined): Promise<void> {
    if (id) await this.db.deleteFrom('meta').where('key', '=', keyOf(id)).execute();
  }

  /** Drops expired sessions and those of another operator token (a handful of rows: one per sign-in). */
  private async sweep(): Promise<void> {
    const rows = await this.db.selectFrom('meta').select(['key', 'value']).where('key', 'like', `${KEY_PREFIX}%`).execute();
    const stale = rows.filter((r) => {
      const [exp, tag] = r.value.split(':');
      return tag !== this.tokenTag || !(Number(exp) > this.now());
    });
    if (stale.length)
      await this.db
        .deleteFrom('meta')
        .where(
          'key',
          'in',
          stale.map((r) => r.key),
        )
        .execute();
  }
}

const keyOf = (id: string) => KEY_PREFIX + sha256(id).toString('hex');
