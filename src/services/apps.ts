// Apps (tenants) and their API keys. The secret is shown once, stored sealed, and is the HS256 key of
// the App's bearer tokens (API.md §1).
import { randomBytes } from 'node:crypto';
import type { Ctx } from './context.js';
import { newUid } from '../util/ids.js';
import { nowIso } from '../util/time.js';

export interface NewApp { uid: string; api_key: string; api_secret: string }

export async function createApp(ctx: Ctx, name: string, environment: 'development' | 'production'): Promise<NewApp> {
  if (!name.trim()) throw new Error('app name must not be empty');
  const uid = newUid();
  const created = nowIso();
  const key = newApiKey();
  await ctx.db.transaction().execute(async (tx) => {
    await tx.insertInto('apps').values({ uid, name, environment, created_at: created }).execute();
    await tx.insertInto('api_keys').values({ api_key: key.api_key, app_uid: uid, secret_sealed: ctx.box.seal(key.api_secret), created_at: created, revoked_at: null }).execute();
  });
  return { uid, ...key };
}

function newApiKey() {
  // Secrets are >= 32 characters: one official SDK refuses shorter ones.
  return { api_key: `mw_${randomBytes(16).toString('hex')}`, api_secret: randomBytes(32).toString('base64url') };
}

export async function getApp(ctx: Ctx, uid: string) {
  return ctx.db.selectFrom('apps').selectAll().where('uid', '=', uid).executeTakeFirst();
}

export async function listApps(ctx: Ctx) {
  return ctx.db.selectFrom('apps').selectAll().orderBy('created_at', 'desc').execute();
}

/** The App and plain secret for an API key, or undefined. Cached: it is on every request's path. */
export class ApiKeyResolver {
  private cache = new Map<string, { appUid: string; environment: 'development' | 'production'; secret: Uint8Array; at: number } | null>();
  constructor(private readonly ctx: Ctx, private readonly ttlMs = 30_000) {}

  async resolve(apiKey: string) {
    const hit = this.cache.get(apiKey);
    if (hit !== undefined && (hit === null ? false : Date.now() - hit.at < this.ttlMs)) return hit;
    const row = await this.ctx.db
      .selectFrom('api_keys')
      .innerJoin('apps', 'apps.uid', 'api_keys.app_uid')
      .select(['api_keys.app_uid', 'api_keys.secret_sealed', 'api_keys.revoked_at', 'apps.environment'])
      .where('api_keys.api_key', '=', apiKey)
      .executeTakeFirst();
    if (!row || row.revoked_at) return null; // not cached: a key created a moment ago must work at once
    const entry = { appUid: row.app_uid, environment: row.environment, secret: new TextEncoder().encode(this.ctx.box.open(row.secret_sealed)), at: Date.now() };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(apiKey, entry);
    return entry;
  }
}
