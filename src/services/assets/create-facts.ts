// What a group of creates reads before its checks (services/assets/create.ts), and its token ids.
//
// On PostgreSQL each statement is a round trip (queriesAreRoundTrips): a socket write and a wake-up on
// both sides while the group's transaction holds its connection, and across a network to a managed
// server, a millisecond or more each. So the facts are one statement, and that statement also reserves
// the token ids: one per create of the group, taken from each collection's counter (the collection's
// App checked in the same statement, so a uid of another App's collection reserves nothing). The
// creates the checks then refuse give theirs back before the group commits: the counter's row is
// locked from the reservation to the commit, so nothing else took ids meanwhile, and the accepted
// creates get consecutive ids as they would have without the reservation. On SQLite, in-process,
// the reads are a query per table and the ids are allocated after the checks.
import { sql } from 'kysely';
import type { Tx } from '../../store/db.js';
import { queriesAreRoundTrips } from '../../store/inserts.js';

/** What the facts of a create depend on (a CreateRequest of create.ts). */
export interface FactsRequest {
  appUid: string;
  params: { user_uid: string; collection_uid: string; asset_external_id: string };
}

/** Token ids reserved for a group, by collection uid: the first id, and how many. */
export type Reserved = Map<string, { first: number; count: number }>;

/** What the checks of a group read: its users, collections, the users' wallets, external ids taken. */
export interface GroupFacts {
  users: { uid: string; app_uid: string }[];
  collections: { uid: string; app_uid: string; chain_id: number }[];
  wallets: { user_uid: string; chain_id: number; address: string }[];
  /** `app uid \n external id` of the group's external ids that exist already. */
  takenIds: Set<string>;
  /** PostgreSQL: the token ids reserved with the facts (see tokenIdsOf); empty on SQLite. */
  reserved: Reserved;
}

const usersOf = (group: FactsRequest[]) => [...new Set(group.map((r) => r.params.user_uid))];
const collectionsOf = (group: FactsRequest[]) => [...new Set(group.map((r) => r.params.collection_uid))];

/** The facts of a group, as its database reads them best. */
export function readGroupFacts(tx: Tx, group: FactsRequest[]): Promise<GroupFacts> {
  return queriesAreRoundTrips(tx) ? groupFactsInOneQuery(tx, group) : groupFacts(tx, group);
}

/** A query per table (SQLite: in-process, each costs microseconds). */
async function groupFacts(tx: Tx, group: FactsRequest[]): Promise<GroupFacts> {
  const userUids = usersOf(group);
  const [users, collections, takenIds, wallets] = await Promise.all([
    tx.selectFrom('users').select(['uid', 'app_uid']).where('uid', 'in', userUids).execute(),
    tx.selectFrom('collections').select(['uid', 'app_uid', 'chain_id']).where('uid', 'in', collectionsOf(group)).execute(),
    takenExternalIds(tx, group),
    tx.selectFrom('wallets').select(['user_uid', 'chain_id', 'address']).where('user_uid', 'in', userUids).execute(),
  ]);
  return { users, collections, wallets, takenIds, reserved: new Map() };
}

/**
 * The same reads in one statement, in PostgreSQL's SQL (`any`, `unnest`), with the group's token ids
 * reserved by the same statement. One statement instead of four took the creates' thread from 83 to
 * ~72 us and the server from 78 to 65 us per create. Left unnamed (a fresh plan each time): the assets
 * part's best plan depends on the table's size.
 */
async function groupFactsInOneQuery(tx: Tx, group: FactsRequest[]): Promise<GroupFacts> {
  const pairs = new Map(group.map((r) => [`${r.appUid}\n${r.params.asset_external_id}`, r]));
  const apps = [...pairs.values()].map((r) => r.appUid);
  const externalIds = [...pairs.values()].map((r) => r.params.asset_external_id);
  const userUids = usersOf(group);
  // One id per create, by collection and App (only the collection's own App matches its row).
  const wanted = new Map<string, { collection: string; app: string; count: number }>();
  for (const r of group) {
    const key = `${r.params.collection_uid}\n${r.appUid}`;
    const w = wanted.get(key) ?? { collection: r.params.collection_uid, app: r.appUid, count: 0 };
    w.count++;
    wanted.set(key, w);
  }
  const want = [...wanted.values()];
  const { rows } = await sql<{ k: 'u' | 'c' | 'w' | 'x' | 'r'; a: string; b: string; c: string | null }>`
    with reserved as (
      update collections set next_token_id = collections.next_token_id + q.n
        from unnest(${want.map((w) => w.collection)}::text[], ${want.map((w) => w.app)}::text[], ${want.map((w) => w.count)}::int[]) as q(uid, app_uid, n)
        where collections.uid = q.uid and collections.app_uid = q.app_uid
        returning collections.uid, collections.next_token_id - q.n as first, q.n)
    select 'u' as k, uid as a, app_uid as b, null::text as c from users where uid = any(${userUids}::text[])
    union all
    select 'c', uid, app_uid, chain_id::text from collections where uid = any(${collectionsOf(group)}::text[])
    union all
    select 'w', user_uid, chain_id::text, address from wallets where user_uid = any(${userUids}::text[])
    union all
    select 'x', a.app_uid, a.asset_external_id, null
      from unnest(${apps}::text[], ${externalIds}::text[]) as q(app_uid, external_id)
      join assets a on a.app_uid = q.app_uid and a.asset_external_id = q.external_id
    union all
    select 'r', uid, first::text, n::text from reserved`.execute(tx);
  const facts: GroupFacts = { users: [], collections: [], wallets: [], takenIds: new Set(), reserved: new Map() };
  for (const r of rows) {
    if (r.k === 'u') facts.users.push({ uid: r.a, app_uid: r.b });
    else if (r.k === 'c') facts.collections.push({ uid: r.a, app_uid: r.b, chain_id: Number(r.c) });
    else if (r.k === 'w') facts.wallets.push({ user_uid: r.a, chain_id: Number(r.b), address: r.c! });
    else if (r.k === 'r') facts.reserved.set(r.a, { first: Number(r.b), count: Number(r.c) });
    else facts.takenIds.add(`${r.a}\n${r.b}`);
  }
  return facts;
}

/** `app uid \n external id` of the group's external ids that exist already. */
async function takenExternalIds(tx: Tx, group: FactsRequest[]): Promise<Set<string>> {
  const byApp = new Map<string, Set<string>>();
  for (const r of group) {
    const s = byApp.get(r.appUid) ?? new Set<string>();
    s.add(r.params.asset_external_id);
    byApp.set(r.appUid, s);
  }
  const taken = new Set<string>();
  for (const [appUid, ids] of byApp) {
    const rows = await tx
      .selectFrom('assets')
      .select('asset_external_id')
      .where('app_uid', '=', appUid)
      .where('asset_external_id', 'in', [...ids])
      .execute();
    for (const row of rows) taken.add(`${appUid}\n${row.asset_external_id}`);
  }
  return taken;
}

/**
 * The token ids of the accepted creates, one for each entry of `collectionUids` in order: consecutive
 * per collection. Taken from what the facts reserved, whose rest is given back to the counter; for a
 * collection nothing was reserved for (SQLite), allocated now with one counter update per collection.
 * Called with every group, an empty list included (a group the checks refused whole gives its ids back).
 */
export async function tokenIdsOf(tx: Tx, collectionUids: string[], reserved: Reserved): Promise<number[]> {
  const need = new Map<string, number>();
  for (const c of collectionUids) need.set(c, (need.get(c) ?? 0) + 1);
  const next = new Map<string, number>();
  for (const [uid, { first, count }] of reserved) {
    const used = need.get(uid) ?? 0;
    if (used > count) throw new Error(`collection ${uid}: ${used} token ids needed, ${count} reserved`);
    next.set(uid, first);
    if (used < count)
      await tx
        .updateTable('collections')
        .set((eb) => ({ next_token_id: eb('next_token_id', '-', count - used) }))
        .where('uid', '=', uid)
        .execute();
  }
  for (const [uid, n] of need) {
    if (next.has(uid)) continue;
    const r = await tx
      .updateTable('collections')
      .set((eb) => ({ next_token_id: eb('next_token_id', '+', n) }))
      .where('uid', '=', uid)
      .returning('next_token_id')
      .executeTakeFirstOrThrow();
    next.set(uid, Number(r.next_token_id) - n);
  }
  return collectionUids.map((c) => {
    const id = next.get(c)!;
    next.set(c, id + 1);
    return id;
  });
}
