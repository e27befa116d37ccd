import { useEffect, useState } from 'preact/hooks';
import { qs } from '../api';
import { useApi, useFocusHeading } from '../hooks';
import { navigate, withQuery, type Location } from '../router';
import { post } from '../api';
import type { Page, RewardRow, UserDetail, UserRow, WalletExport } from '../../../src/services/console/types';
import { amount as inUnits } from '../format';
import { CopyButton, ErrorBox, Field, Loading, Mono, onInput, Pager, Section, Status, Table, Time, Uid, useAction } from '../ui';
import { assetColumns, hasTransitional } from './assets';

export function UsersPage({ appUid, loc }: { appUid: string; loc: Location }) {
  const q = loc.query.get('q') ?? '';
  const after = loc.query.get('after') ?? undefined;
  const users = useApi<Page<UserRow>>(`/apps/${appUid}/users${qs({ q, cursor: after })}`, () => (after ? false : 5000));
  const heading = useFocusHeading(`users-${appUid}`);
  const [search, setSearch] = useState(q);
  useEffect(() => setSearch(q), [q]);

  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        Users
      </h1>
      <search>
        <form
          class="filters"
          onSubmit={(e) => {
            e.preventDefault();
            navigate(withQuery(loc, { q: search.trim(), after: undefined }));
          }}
        >
          <div class="field">
            <label for="user-search">Search users</label>
            <input id="user-search" type="search" placeholder="uid, email or external id" value={search} onInput={onInput(setSearch)} />
          </div>
          <button type="submit">Search</button>
          {q && (
            <button type="button" onClick={() => navigate(withQuery(loc, { q: undefined, after: undefined }))}>
              Clear
            </button>
          )}
        </form>
      </search>
      <ErrorBox error={users.error} />
      {!users.data ? (
        <Loading />
      ) : (
        <>
          <Table
            caption={q ? `Users matching ${q}` : 'Users, newest first'}
            rows={users.data.items}
            rowKey={(u) => u.uid}
            empty={q ? 'No user matches.' : 'No user yet: users are created through the API (POST /v1/user).'}
            columns={[
              { title: 'UID', cell: (u) => <Uid value={u.uid} href={`/console/apps/${appUid}/users/${u.uid}`} label="user uid" /> },
              { title: 'Email', cell: (u) => u.email ?? <span class="muted">—</span> },
              { title: 'External id', cell: (u) => u.user_external_id ?? <span class="muted">—</span> },
              {
                title: 'Wallet',
                cell: (u) => (u.wallets.length ? u.wallets.map((w) => <Uid value={w.address} label="address" />) : <span class="muted">not created yet</span>),
              },
              { title: 'Created', cell: (u) => <Time iso={u.created_at} /> },
            ]}
          />
          {!q && <Pager loc={loc} next={users.data.next_cursor} />}
        </>
      )}
    </>
  );
}

export function UserPage({ appUid, userUid }: { appUid: string; userUid: string }) {
  // The rewards' token symbols: amounts are shown with their unit.
  const rewards = useApi<RewardRow[]>(`/apps/${appUid}/rewards`);
  const symbol = (rewardUid: string) => rewards.data?.find((r) => r.uid === rewardUid)?.token_symbol ?? '';
  const detail = useApi<UserDetail>(`/apps/${appUid}/users/${encodeURIComponent(userUid)}`, (d) => {
    if (!d) return false;
    const busy = hasTransitional(d.assets) || [...d.transfers, ...d.burns, ...d.allocations, ...d.claims].some((r) => r.status === 'pending');
    return busy ? 1500 : 10000;
  });
  const heading = useFocusHeading(`user-${userUid}`);
  const d = detail.data;
  return (
    <>
      <p class="back">
        <a href={`/console/apps/${appUid}/users`}>← Users</a>
      </p>
      {/* Named as people know them: their email, else their external id; the uid is listed below. */}
      <h1 ref={heading} tabIndex={-1}>
        {d ? (d.user.email ?? d.user.user_external_id ?? `User ${userUid}`) : `User ${userUid}`}
      </h1>
      <ErrorBox error={detail.error} />
      {!d ? (
        !detail.error && <Loading />
      ) : (
        <>
          <dl class="props">
            <dt>UID</dt>
            <dd>
              <Uid value={d.user.uid} label="uid" />
            </dd>
            <dt>Email</dt>
            <dd>{d.user.email ?? '—'}</dd>
            <dt>External id</dt>
            <dd>{d.user.user_external_id ?? '—'}</dd>
            <dt>Wallet</dt>
            <dd>
              {d.user.wallets.length
                ? d.user.wallets.map((w) => (
                    <span key={w.address}>
                      <Uid value={w.address} href={w.explorer_url} external label="address" keep={10} />
                    </span>
                  ))
                : 'not created yet (created at the first mint)'}
            </dd>
            <dt>Created</dt>
            <dd>
              <Time iso={d.user.created_at} />
            </dd>
            <dt>Wallet exported</dt>
            <dd>{d.user.wallet_exported_at ? <Time iso={d.user.wallet_exported_at} /> : 'never'}</dd>
          </dl>
          {d.user.wallets.length > 0 && <WalletExportSection appUid={appUid} userUid={d.user.uid} onDone={detail.reload} />}
          <Section title={`Assets (${d.assets.length})`}>
            <Table caption="Assets of this user" rows={d.assets} rowKey={(a) => a.uid} columns={assetColumns(appUid)} empty="No asset." />
          </Section>
          <Section title={`Transfers (${d.transfers.length})`}>
            <Table
              caption="Transfers by this user"
              rows={d.transfers}
              rowKey={(t) => t.uid}
              empty="No transfer."
              columns={[
                { title: 'UID', cell: (t) => <Uid value={t.uid} label="uid" /> },
                { title: 'Asset', cell: (t) => <a href={`/console/apps/${appUid}/assets/${t.asset_uid}`}>{t.asset_uid}</a> },
                { title: 'To', cell: (t) => <Uid value={t.to_address} label="address" /> },
                { title: 'Status', cell: (t) => <Status value={t.status} title={t.reason} /> },
                { title: 'Created', cell: (t) => <Time iso={t.created_at} /> },
              ]}
            />
          </Section>
          <Section title={`Burns (${d.burns.length})`}>
            <Table
              caption="Burns by this user"
              rows={d.burns}
              rowKey={(b) => b.uid}
              empty="No burn."
              columns={[
                { title: 'UID', cell: (b) => <Uid value={b.uid} label="uid" /> },
                { title: 'Asset', cell: (b) => <a href={`/console/apps/${appUid}/assets/${b.asset_uid}`}>{b.asset_uid}</a> },
                { title: 'Status', cell: (b) => <Status value={b.status} /> },
                { title: 'Created', cell: (b) => <Time iso={b.created_at} /> },
              ]}
            />
          </Section>
          <Section title={`Allocations (${d.allocations.length})`}>
            <Table
              caption="Reward allocations to this user"
              rows={d.allocations}
              rowKey={(a) => a.uid}
              empty="No allocation."
              columns={[
                { title: 'UID', cell: (a) => <Uid value={a.uid} label="uid" /> },
                { title: 'Reward', cell: (a) => <Uid value={a.reward_uid} href={`/console/apps/${appUid}/rewards/${a.reward_uid}`} label="reward uid" /> },
                { title: 'Amount', cell: (a) => inUnits(a.amount, symbol(a.reward_uid)), class: 'num' },
                { title: 'Status', cell: (a) => <Status value={a.status} title={a.reason} /> },
                { title: 'Created', cell: (a) => <Time iso={a.created_at} /> },
              ]}
            />
          </Section>
          <Section title={`Claims (${d.claims.length})`}>
            <Table
              caption="Reward claims by this user"
              rows={d.claims}
              rowKey={(c) => c.uid}
              empty="No claim."
              columns={[
                { title: 'UID', cell: (c) => <Uid value={c.uid} label="uid" /> },
                { title: 'Reward', cell: (c) => <Uid value={c.reward_uid} href={`/console/apps/${appUid}/rewards/${c.reward_uid}`} label="reward uid" /> },
                { title: 'Amount', cell: (c) => inUnits(c.amount, symbol(c.reward_uid)), class: 'num' },
                { title: 'To', cell: (c) => <Uid value={c.to_address} label="address" /> },
                { title: 'Status', cell: (c) => <Status value={c.status} title={c.reason} /> },
                { title: 'Created', cell: (c) => <Time iso={c.created_at} /> },
              ]}
            />
          </Section>
        </>
      )}
    </>
  );
}

/**
 * Hands the user their wallet key, sealed (HPKE) to an X25519 public key they hold: the console never
 * sees the key, only what the user alone can open.
 */
function WalletExportSection({ appUid, userUid, onDone }: { appUid: string; userUid: string; onDone?: () => void }) {
  const [recipient, setRecipient] = useState('');
  const [result, setResult] = useState<WalletExport | null>(null);
  const exportKey = useAction(() =>
    post<WalletExport>(`/apps/${appUid}/users/${encodeURIComponent(userUid)}/wallet-export`, { recipient_public_key: recipient.trim() }),
  );
  return (
    <Section title="Export the wallet">
      <p>
        Gives the user their wallet's private key, sealed with HPKE to their X25519 public key (base64url of the raw 32 bytes). Mintworks keeps signing for the
        wallet afterwards: from then on the user controls it too.
      </p>
      <form
        class="card form"
        onSubmit={async (e) => {
          e.preventDefault();
          const r = await exportKey.run();
          if (r) {
            setResult(r);
            onDone?.();
          }
        }}
      >
        <Field label="Recipient public key" id="export-recipient" hint="raw X25519 public key, base64url" wide>
          <input id="export-recipient" value={recipient} onInput={onInput(setRecipient)} autocomplete="off" spellcheck={false} />
        </Field>
        <div class="form-actions">
          <button type="submit" class="danger" disabled={exportKey.busy || !recipient.trim()}>
            Export wallet
          </button>
        </div>
      </form>
      <ErrorBox error={exportKey.error} />
      {result && (
        <div class="card callout" role="status">
          <p>
            Sealed key of <Uid value={result.address} label="address" keep={10} />: send both values to the user.
          </p>
          <dl class="props">
            <dt>enc</dt>
            <dd>
              <Mono>{result.enc}</Mono> <CopyButton value={result.enc} label="enc" />
            </dd>
            <dt>ciphertext</dt>
            <dd>
              <Mono>{result.ciphertext}</Mono> <CopyButton value={result.ciphertext} label="ciphertext" />
            </dd>
          </dl>
        </div>
      )}
    </Section>
  );
}
