import { SignJWT } from 'jose';

/** A bearer token as the official SDKs make them: HS256 with the API secret, claims resource/action/user_id. */
export async function signAppToken(apiKey: string, apiSecret: string, expiresInSeconds?: number): Promise<string> {
  const jwt = new SignJWT({ resource: '*', action: '*', user_id: '*', api_key: apiKey }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' });
  if (expiresInSeconds) jwt.setExpirationTime(Math.floor(Date.now() / 1000) + expiresInSeconds);
  return jwt.sign(new TextEncoder().encode(apiSecret));
}

/** The App's current key and plain secret (for the CLI's `token` command). */
export async function appCredentials(db: import('../../store/db.js').Db, box: import('../../util/secretbox.js').SecretBox, appUid: string) {
  const row = await db
    .selectFrom('api_keys')
    .select(['api_key', 'secret_sealed'])
    .where('app_uid', '=', appUid)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  if (!row) return null;
  return { api_key: row.api_key, api_secret: box.open(row.secret_sealed) };
}
