import { sql } from 'kysely';
import type { Ctx } from '../context.js';
import { keysetPage, pageOf, type PageRequest } from '../requests/pages.js';
import { ApiError } from '../../util/errors.js';
import { withNewUid } from '../uids.js';
import { nowIso } from '../../util/time.js';
import { isUniqueViolation } from '../../store/db.js';
import { userView, type WalletRow } from '../views.js';
import type { DbOrTx } from '../../store/db.js';
import { emailKey } from '../../domain/email.js';
import { saveAnswer, type IdempotentWrite } from '../requests/idempotency.js';

/** POST /user: email unique per App in any letter case (stored as given); external ids compare exactly. */
export async function createUser(ctx: Ctx, appUid: string, input: { email?: string | null; user_external_id?: string | null }, idem?: IdempotentWrite) {
  const email = input.email ?? null;
  const key = email === null ? null : emailKey(email);
  const ext = input.user_external_id ?? null;
  try {
    return await withNewUid('users', (uid) =>
      ctx.db.transaction().execute(async (tx) => {
        const clash = await tx
          .selectFrom('users')
          .select('uid')
          .where('app_uid', '=', appUid)
          .where((eb) =>
            eb.or([
              // `email =` also finds users from before migration 008 whose case-variant email has no key
              ...(email !== null ? [eb('email_key', '=', key), eb('email', '=', email)] : []),
              ...(ext !== null ? [eb('user_external_id', '=', ext)] : []),
              eb.lit(false),
            ]),
          )
          .executeTakeFirst();
        if (clash) throw userExists();
        await tx
          .insertInto('users')
          .values({ uid, app_uid: appUid, email, email_key: key, user_external_id: ext, wallet_address: null, wallet_created_at: null, created_at: nowIso() })
          .execute();
        await saveAnswer(tx, idem, { uid });
        return { uid };
      }),
    );
  } catch (err) {
    // Two concurrent creates with the same email: the unique index decides, with the same answer.
    if (isUniqueViolation(err, 'email') || isUniqueViolation(err, 'user_external_id')) throw userExists();
    throw err;
  }
}

const userExists = () => ApiError.of('user_exists');

export async function getUser(ctx: Ctx, appUid: string, uid: string) {
  const u = await ctx.db.selectFrom('users').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!u) throw ApiError.notFound('User');
  return userView(u, await walletsOf(ctx.db, [u.uid]), ctx.installation);
}

/**
 * GET /user?email= (case-insensitive) or ?user_external_id= (exact). Of users from before migration 008
 * whose emails differ only by case, the one spelled exactly as asked wins, else the oldest (the one
 * holding the key).
 */
export async function findUser(ctx: Ctx, appUid: string, by: 'email' | 'user_external_id', value: string) {
  const q = ctx.db.selectFrom('users').selectAll().where('app_uid', '=', appUid);
  const u =
    by === 'email'
      ? await q
          .where((eb) => eb.or([eb('email_key', '=', emailKey(value)), eb('email', '=', value)]))
          .orderBy(sql`case when email = ${value} then 0 else 1 end`)
          .orderBy('created_at')
          .limit(1)
          .executeTakeFirst()
      : await q.where('user_external_id', '=', value).executeTakeFirst();
  return u ? userView(u, await walletsOf(ctx.db, [u.uid]), ctx.installation) : null;
}

export async function requireUserRow(ctx: Ctx, appUid: string, uid: string) {
  const u = await ctx.db.selectFrom('users').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!u) throw ApiError.notFound('User');
  return u;
}

/** An App's users for the management API, a page at a time (newest first): with `wallet_exported_at`. */
export async function listUsersOfApp(ctx: Ctx, appUid: string, page: PageRequest = {}) {
  const rows = await keysetPage(ctx.db.selectFrom('users').selectAll().where('app_uid', '=', appUid), 'users', page).execute();
  const wallets = await walletsOf(
    ctx.db,
    rows.map((u) => u.uid),
  );
  return pageOf(rows, page, (u) => ({ ...userView(u, wallets, ctx.installation), wallet_exported_at: u.wallet_exported_at }));
}

/** The wallets of some users, each user's oldest first (one per chain). */
export async function walletsOf(db: DbOrTx, userUids: string[]): Promise<WalletRow[]> {
  if (userUids.length === 0) return [];
  const rows: WalletRow[] = [];
  for (let i = 0; i < userUids.length; i += 500) {
    rows.push(
      ...(await db
        .selectFrom('wallets')
        .select(['user_uid', 'chain_id', 'address'])
        .where('user_uid', 'in', userUids.slice(i, i + 500))
        .orderBy('user_uid')
        .orderBy('created_at')
        .orderBy('chain_id')
        .execute()),
    );
  }
  return rows;
}
