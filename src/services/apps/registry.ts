// Apps (tenants) and their API keys. The secret is shown once, stored sealed, and is the HS256 key of
// the App's bearer tokens.
import { recordAudit, type Actor } from '../audit.js';
import { randomBytes } from 'node:crypto';
import type { Ctx } from '../context.js';
import { newUid } from '../../util/ids.js';
import { nowIso } from '../../util/time.js';
import type { AppEnvironment } from '../../domain/environment.js';

export interface NewApp {
  uid: string;
  api_key: string;
  api_secret: string;
}

/** `actor`: the operator who creates it (audited in the same transaction); none for the Demo App of a first start. */
export async function createApp(ctx: Ctx, name: string, environment: AppEnvironment, actor?: Actor): Promise<NewApp> {
  if (!name.trim()) throw new Error('app name must not be empty');
  const uid = newUid();
  const created = nowIso();
  const key = newApiKey();
  await ctx.db.transaction().execute(async (tx) => {
    await tx.insertInto('apps').values({ uid, name, environment, created_at: created }).execute();
    await tx
      .insertInto('api_keys')
      .values({ api_key: key.api_key, app_uid: uid, secret_sealed: ctx.box.seal(key.api_secret), created_at: created, revoked_at: null })
      .execute();
    if (actor) await recordAudit(tx, actor, { action: 'app.created', app_uid: uid, details: { name, environment, api_key: key.api_key } });
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

/** What a request needs of its App, resolved from the API key. */
export interface ResolvedKey {
  appUid: string;
  environment: AppEnvironment;
  /** The HS256 key, imported once (importing it per request cost ~6 % of a request's CPU). */
  key: CryptoKey;
  /** Bearer tokens already verified with this secret -> their `exp` (seconds) or null (none). */
  verified: Map<string, number | null>;
  at: number;
}

/**
 * The App and its imported secret for an API key, or null. Cached for `ttlMs`: it is on every request's
 * path. A revoked or rotated key takes effect within the TTL; verified tokens are cached inside the
 * entry, so they are verified again whenever the entry is (and never outlive their `exp`).
 */
export class ApiKeyResolver {
  private cache = new Map<string, ResolvedKey>();
  constructor(
    private readonly ctx: Ctx,
    private readonly ttlMs = 30_000,
  ) {
    resolvers.add(new WeakRef(this));
  }

  /** Drops a key from the cache: its secret was rotated in this process (other processes: within the TTL). */
  forget(apiKey: string): void {
    this.cache.delete(apiKey);
  }

  /** The cached entry of a key, if fresh: no database access. */
  cached(apiKey: string): ResolvedKey | null {
    const hit = this.cache.get(apiKey);
    return hit && Date.now() - hit.at < this.ttlMs ? hit : null;
  }

  async resolve(apiKey: string): Promise<ResolvedKey | null> {
    const hit = this.cached(apiKey);
    if (hit) return hit;
    const row = await this.ctx.db
      .selectFrom('api_keys')
      .innerJoin('apps', 'apps.uid', 'api_keys.app_uid')
      .select(['api_keys.app_uid', 'api_keys.secret_sealed', 'api_keys.revoked_at', 'apps.environment'])
      .where('api_keys.api_key', '=', apiKey)
      .executeTakeFirst();
    if (!row || row.revoked_at) {
      this.cache.delete(apiKey); // not cached: a key created a moment ago must work at once
      return null;
    }
    const secret = new TextEncoder().encode(this.ctx.box.open(row.secret_sealed));
    const key = await crypto.subtle.importKey('raw', secret, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
    const entry: ResolvedKey = { appUid: row.app_uid, environment: row.environment, key, verified: new Map(), at: Date.now() };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(apiKey, entry);
    return entry;
  }
}

const resolvers = new Set<WeakRef<ApiKeyResolver>>();

/** Every resolver of this process forgets `apiKey` (after its secret was rotated). */
export function forgetApiKey(apiKey: string): void {
  for (const ref of resolvers) {
    const r = ref.deref();
    if (r) r.forget(apiKey);
    else resolvers.delete(ref);
  }
}
