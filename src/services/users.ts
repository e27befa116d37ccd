import type { Ctx } from './context.js';
import { keysetPage, pageOf, type PageRequest } from './pages.js';
import { ApiError } from '../util/errors.js';
import { newUid } from '../util/ids.js';
import { nowIso } from '../util/time.js';
import { isUniqueViolation } from '../store/db.js';
import { userView } from './views.js';

export async function createUser(ctx: Ctx, appUid: string, input: { email?: string | null; user_external_id?: string | null }) {
  const email = input.email ?? null;
  const ext = input.user_external_id ?? null;
  const uid = newUid();
  try {
    await ctx.db.transaction().execute(async (tx) => {
      const clash = await tx
        .selectFrom('users')
        .select('uid')
        .where('app_uid', '=', appUid)
        .where((eb) => eb.or([...(email !== null ? [eb('email', '=', email)] : []), ...(ext !== null ? [eb('user_external_id', '=', ext)] : []), eb.lit(false)]))
        .executeTakeFirst();
      if (clash) throw userExists();
      await tx.insertInto('users').values({ uid, app_uid: appUid, email, user_external_id: ext, wallet_address: null, wallet_created_at: null, created_at: nowIso() }).execute();
    });
  } catch (err) {
    // Two concurrent creates with the same email: the unique index decides, with the same answer.
    if (isUniqueViolation(err, 'email') || isUniqueViolation(err, 'user_external_id')) throw userExists();
    throw err;
  }
  return { uid };
}

const userExists = () => ApiError.client(400, 'user_exists', 'User already exists.');

export async function getUser(ctx: Ctx, appUid: string, uid: string) {
  const u = await ctx.db.selectFrom('users').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!u) throw ApiError.client(404, 'not_found', 'User not found.');
  return userView(u, ctx.config);
}

export async function findUser(ctx: Ctx, appUid: string, by: 'email' | 'user_external_id', value: string) {
  const u = await ctx.db.selectFrom('users').selectAll().where('app_uid', '=', appUid).where(by, '=', value).executeTakeFirst();
  return u ? userView(u, ctx.config) : null;
}

export async function requireUserRow(ctx: Ctx, appUid: string, uid: string) {
  const u = await ctx.db.selectFrom('users').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!u) throw ApiError.client(404, 'not_found', 'User not found.');
  return u;
}

/** An App's users, a page at a time (newest first). */
export async function listUsersOfApp(ctx: Ctx, appUid: string, page: PageRequest = {}) {
  const rows = await keysetPage(ctx.db.selectFrom('users').selectAll().where('app_uid', '=', appUid), 'users', page).execute();
  return pageOf(rows, page, (u) => userView(u, ctx.config));
}
