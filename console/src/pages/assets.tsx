import { useEffect, useState } from 'preact/hooks';
import { qs } from '../api';
import { useApi, useFocusHeading } from '../hooks';
import { navigate, withQuery, type Location } from '../router';
import type { AssetDetail, AssetRow, AssetStatus, CollectionRow, Page } from '../../../src/services/console/types';
import { type Column, ErrorBox, IdText, ExternalLink, Loading, Mono, onInput, Pager, Section, Status, Table, Time, Uid } from '../ui';

const STATUSES: [AssetStatus, string][] = [
  ['not_minted', 'Not minted'],
  ['minted', 'Minted'],
  ['transferring', 'Transferring'],
  ['burning', 'Burning'],
  ['burned', 'Burned'],
  ['failed', 'Failed'],
];

const TRANSITIONAL = new Set<AssetStatus>(['not_minted', 'transferring', 'burning']);
export const hasTransitional = (rows: AssetRow[]) => rows.some((a) => TRANSITIONAL.has(a.status));

/** An image that may not load (a dead link, a host that refuses): an empty box then, not a broken icon. */
function useLoads(src: string | null) {
  const [failed, setFailed] = useState<string | null>(null);
  return { ok: !!src && failed !== src, onError: () => setFailed(src) };
}

function Thumb({ src }: { src: string | null }) {
  const img = useLoads(src);
  if (!src || !img.ok) return <span class="thumb empty" aria-hidden="true" />;
  // biome-ignore lint/a11y/noNoninteractiveElementInteractions: onError is the image failing to load, not something the user does
  return <img class="thumb" src={src} alt="" loading="lazy" referrerPolicy="no-referrer" width={40} height={40} onError={img.onError} />;
}

function AssetImage({ src, name }: { src: string | null; name: string }) {
  const img = useLoads(src);
  if (!src || !img.ok) return <div class="asset-image empty">{src ? 'image not available' : 'no image'}</div>;
  // biome-ignore lint/a11y/noNoninteractiveElementInteractions: onError is the image failing to load, not something the user does
  return <img class="asset-image" src={src} alt={name} referrerPolicy="no-referrer" onError={img.onError} />;
}

export function assetColumns(appUid: string): Column<AssetRow>[] {
  return [
    { title: 'Image', cell: (a) => <Thumb src={a.image} />, class: 'narrow' },
    { title: 'Name', cell: (a) => <a href={`/console/apps/${appUid}/assets/${a.uid}`}>{a.name}</a> },
    { title: 'UID', cell: (a) => <Uid value={a.uid} label="uid" /> },
    { title: 'Token id', cell: (a) => a.token_id, class: 'num' },
    { title: 'Collection', cell: (a) => a.collection_name },
    {
      title: 'Owner',
      cell: (a) =>
        a.owner_user_uid ? (
          <Uid value={a.owner_user_uid} href={`/console/apps/${appUid}/users/${a.owner_user_uid}`} label="user uid" />
        ) : a.owner_address ? (
          <Uid value={a.owner_address} label="address" />
        ) : (
          <span class="muted">—</span>
        ),
    },
    {
      title: 'Status',
      cell: (a) => (
        <>
          <Status value={a.status} />
          {a.error && <div class="field-error small-text">{a.error}</div>}
        </>
      ),
    },
  ];
}

export function AssetsPage({ appUid, loc }: { appUid: string; loc: Location }) {
  const collection = loc.query.get('collection') ?? '';
  const status = loc.query.get('status') ?? '';
  const q = loc.query.get('q') ?? '';
  const after = loc.query.get('after') ?? undefined;
  const collections = useApi<CollectionRow[]>(`/apps/${appUid}/collections`);
  // Live: the first page refreshes every few seconds; any page with an asset in flight, sooner.
  const assets = useApi<Page<AssetRow>>(`/apps/${appUid}/assets${qs({ collection, status, q, cursor: after })}`, (d) =>
    d && hasTransitional(d.items) ? 1500 : after ? false : 5000,
  );
  const heading = useFocusHeading(`assets-${appUid}`);
  const [search, setSearch] = useState(q);
  useEffect(() => setSearch(q), [q]);

  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        Assets
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
            <label for="asset-collection">Collection</label>
            <select
              id="asset-collection"
              value={collection}
              onChange={(e) => navigate(withQuery(loc, { collection: e.currentTarget.value, after: undefined }))}
            >
              <option value="">All collections</option>
              {collections.data?.map((c) => (
                <option value={c.uid} key={c.uid}>
                  {c.name}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="asset-status">Status</label>
            <select id="asset-status" value={status} onChange={(e) => navigate(withQuery(loc, { status: e.currentTarget.value, after: undefined }))}>
              <option value="">Any status</option>
              {STATUSES.map(([v, label]) => (
                <option value={v} key={v}>
                  {label}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="asset-search">Find an asset</label>
            <input id="asset-search" type="search" placeholder="uid or external id" value={search} onInput={onInput(setSearch)} />
          </div>
          <button type="submit">Find</button>
          {q && (
            <button type="button" onClick={() => navigate(withQuery(loc, { q: undefined, after: undefined }))}>
              Clear
            </button>
          )}
        </form>
      </search>
      <ErrorBox error={assets.error} />
      {!assets.data ? (
        <Loading />
      ) : (
        <>
          <Table
            caption="Assets, newest first"
            rows={assets.data.items}
            rowKey={(a) => a.uid}
            columns={assetColumns(appUid)}
            empty={collection || status || q ? 'No asset matches.' : 'No asset yet: assets are created through the API (POST /v1/asset).'}
          />
          {!q && <Pager loc={loc} next={assets.data.next_cursor} />}
        </>
      )}
    </>
  );
}

export function AssetPage({ appUid, assetUid }: { appUid: string; assetUid: string }) {
  const detail = useApi<AssetDetail>(`/apps/${appUid}/assets/${encodeURIComponent(assetUid)}`, (d) => (d && TRANSITIONAL.has(d.asset.status) ? 1500 : 10000));
  const heading = useFocusHeading(`asset-${assetUid}`);
  const d = detail.data;
  const a = d?.asset;
  return (
    <>
      <p class="back">
        <a href={`/console/apps/${appUid}/assets`}>← Assets</a>
      </p>
      <h1 ref={heading} tabIndex={-1}>
        {a ? a.name : `Asset ${assetUid}`}
      </h1>
      <ErrorBox error={detail.error} />
      {!d || !a ? (
        !detail.error && <Loading />
      ) : (
        <>
          <div class="asset-head">
            <AssetImage src={a.image} name={a.name} />
            <dl class="props">
              <dt>UID</dt>
              <dd>
                <Uid value={a.uid} label="uid" />
              </dd>
              <dt>External id</dt>
              <dd>{a.asset_external_id}</dd>
              <dt>Status</dt>
              <dd>
                <Status value={a.status} />
                {a.error && <div class="field-error">{a.error}</div>}
              </dd>
              <dt>Token id</dt>
              <dd>
                {a.token_id} {a.explorer_url && <ExternalLink href={a.explorer_url}>explorer</ExternalLink>}
              </dd>
              <dt>Collection</dt>
              <dd>
                {d.collection.name}{' '}
                {d.collection.contract_address && (
                  <Uid value={d.collection.contract_address} href={d.collection.explorer_url} external label="contract address" />
                )}
              </dd>
              <dt>Owner</dt>
              <dd>
                {a.owner_user_uid ? (
                  <Uid value={a.owner_user_uid} href={`/console/apps/${appUid}/users/${a.owner_user_uid}`} label="user uid" />
                ) : a.owner_address ? (
                  <Uid value={a.owner_address} label="address" keep={10} />
                ) : (
                  '—'
                )}
              </dd>
              <dt>Minted for</dt>
              <dd>
                <Uid value={a.mint_for_user_uid} href={`/console/apps/${appUid}/users/${a.mint_for_user_uid}`} label="user uid" />
              </dd>
              <dt>Token URI</dt>
              <dd>
                {a.token_uri ? (
                  /^https?:/.test(a.token_uri) ? (
                    <ExternalLink href={a.token_uri}>{a.token_uri}</ExternalLink>
                  ) : (
                    <Mono>{a.token_uri}</Mono>
                  )
                ) : (
                  <span class="muted">set when minted</span>
                )}
              </dd>
              <dt>Sale price</dt>
              <dd>{a.sale_price_in_usd === null ? '—' : `$${a.sale_price_in_usd}`}</dd>
              <dt>Created</dt>
              <dd>
                <Time iso={a.created_at} />
              </dd>
            </dl>
          </div>
          <Section title="Metadata">
            {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling block must take the keyboard focus to be scrolled without a mouse */}
            {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: its name is what a screen reader announces on that focus */}
            <pre class="json" tabIndex={0} aria-label="Metadata document">
              {JSON.stringify(a.metadata, null, 2)}
            </pre>
          </Section>
          <Section title="Transactions">
            <Table
              caption="Chain transactions of this asset"
              rows={d.transactions}
              rowKey={(t) => t.hash}
              empty="No transaction yet."
              columns={[
                { title: 'Kind', cell: (t) => t.kind },
                {
                  title: 'Hash',
                  cell: (t) => <Uid value={t.hash} href={t.explorer_url} external keep={8} label="transaction hash" />,
                },
                { title: 'Status', cell: (t) => <Status value={t.status} title={t.error} /> },
                { title: 'Block', cell: (t) => t.block_number ?? '—', class: 'num' },
                { title: 'Sent', cell: (t) => <Time iso={t.time} /> },
              ]}
            />
          </Section>
          <Section title="History">
            <ol class="history">
              {d.history.map((h, i) => (
                <li key={i}>
                  <Time iso={h.time} /> <strong>{h.event}</strong>{' '}
                  {h.detail && (
                    <span class="muted">
                      <IdText text={h.detail} />
                    </span>
                  )}
                </li>
              ))}
            </ol>
          </Section>
        </>
      )}
    </>
  );
}
