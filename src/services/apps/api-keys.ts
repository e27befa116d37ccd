// An App's API key: read it, rotate its secret (the key stays; the new secret is shown once), and make
// a bearer token with it. A rotated secret takes effect at once in this process, and within the API's
// key cache TTL (30 s) in other API processes.
import { randomBytes } from 'node:crypto';
import type { Ctx } from '../context.js';
import { ApiError } from '../../util/errors.js';
import { recordAudit, type Actor } from '../audit.js';
import { appCredentials, signAppToken } from './tokens.js';
import { forgetApiKey } from './registry.js';

async function currentKey(ctx: Ctx, appUid: string) {
  const row = await ctx.db
    .selectFrom('api_keys')
    .select(['api_key', 'created_at'])
    .where('app_uid', '=', appUid)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  if (!row) throw ApiError.notFound('API key');
  return row;
}

export async function getApiKey(ctx: Ctx, appUid: string): Promise<{ api_key: string; created_at: string }> {
  return currentKey(ctx, appUid);
}

export async function rotateApiSecret(ctx: Ctx, appUid: string, actor: Actor): Promise<{ uid: string; api_key: string; api_secret: string }> {
  const { api_key } = await currentKey(ctx, appUid);
  // >= 32 characters, like a new App's: one official SDK refuses shorter secrets.
  const api_secret = randomBytes(32).toString('base64url');
  await ctx.db.transaction().execute(async (tx) => {
    await tx
      .updateTable('api_keys')
      .set({ secret_sealed: ctx.box.seal(api_secret) })
      .where('api_key', '=', api_key)
      .execute();
    await recordAudit(tx, actor, { action: 'app.secret_rotated', app_uid: appUid, details: { api_key } });
  });
  forgetApiKey(api_key);
  return { uid: appUid, api_key, api_secret };
}

/** A bearer token for the App's current key, as the official SDKs make them, valid `seconds`. */
export async function bearerToken(ctx: Ctx, appUid: string, seconds: number): Promise<{ token: string; expires_at: string }> {
  const creds = await appCredentials(ctx.db, ctx.box, appUid);
  if (!creds) throw ApiError.notFound('API key');
  const token = await signAppToken(creds.api_key, creds.api_secret, seconds);
  return { token, expires_at: new Date(Date.now() + seconds * 1000).toISOString() };
}
