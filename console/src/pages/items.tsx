// Items of ERC-1155 collections: a collection's items (on its page), one item (supply, metadata, mints,
// holders), and a user's holdings (on their page). Amounts are exact (numbers or decimal strings from
// the API) and shown with separators, never with an exponent.
import { useApi, useFocusHeading } from '../hooks';
import type { ItemDetail, ItemHolding, ItemRowView } from '../../../src/services/console/types';
import { decimal } from '../format';
import { ErrorBox, ExternalLink, Loading, Mono, Section, Status, Table, Time, Uid } from '../ui';

const itemHref = (appUid: string, itemUid: string) => `/console/apps/${appUid}/items/${encodeURIComponent(itemUid)}`;
const supplyText = (i: Pick<ItemRowView, 'minted_supply' | 'max_supply'>) =>
  i.max_supply === null ? `${decimal(i.minted_supply)} (no max)` : `${decimal(i.minted_supply)} of ${decimal(i.max_supply)}`;

/** The items section of an ERC-1155 collection's page. */
export function CollectionItems({ appUid, collectionUid }: { appUid: string; collectionUid: string }) {
  const items = useApi<ItemRowView[]>(`/apps/${appUid}/collections/${encodeURIComponent(collectionUid)}/items`, () => 10000);
  return (
    <Section title={items.data ? `Items (${decimal(items.data.length)})` : 'Items'}>
      <ErrorBox error={items.error} />
      {!items.data ? (
        !items.error && <Loading />
      ) : (
        <Table
          caption="Items of this collection, by token id"
          rows={items.data}
          rowKey={(i) => i.uid}
          empty="No item yet: POST /v1/item creates one."
          columns={[
            { title: 'Name', cell: (i) => <a href={itemHref(appUid, i.uid)}>{i.name}</a> },
            { title: 'Token id', cell: (i) => decimal(i.token_id) },
            { title: 'External id', cell: (i) => <Mono>{i.item_external_id}</Mono> },
            { title: 'Minted', cell: (i) => supplyText(i) },
            { title: 'Created', cell: (i) => <Time iso={i.created_at} /> },
          ]}
        />
      )}
    </Section>
  );
}

/** One item: its supply, metadata, newest mints and holders. */
export function ItemPage({ appUid, itemUid }: { appUid: string; itemUid: string }) {
  const detail = useApi<ItemDetail>(`/apps/${appUid}/items/${encodeURIComponent(itemUid)}`, (d) =>
    d?.mints.some((m) => m.status === 'pending') ? 1500 : 10000,
  );
  const heading = useFocusHeading(`item-${itemUid}`);
  const d = detail.data;
  return (
    <>
      <p class="back">
        <a href={d ? `/console/apps/${appUid}/collections/${d.item.collection_uid}` : `/console/apps/${appUid}/collections`}>
          ← {d ? d.collection_name : 'Collections'}
        </a>
      </p>
      <h1 ref={heading} tabIndex={-1}>
        {d ? d.item.name : `Item ${itemUid}`}
      </h1>
      <ErrorBox error={detail.error} />
      {!d ? (
        !detail.error && <Loading />
      ) : (
        <>
          <dl class="props">
            <dt>UID</dt>
            <dd>
              <Uid value={d.item.uid} label="uid" />
            </dd>
            <dt>External id</dt>
            <dd>
              <Mono>{d.item.item_external_id}</Mono>
            </dd>
            <dt>Token id</dt>
            <dd>{decimal(d.item.token_id)}</dd>
            <dt>Minted supply</dt>
            <dd>{decimal(d.item.minted_supply)}</dd>
            <dt>Max supply</dt>
            <dd>{d.item.max_supply === null ? 'unlimited' : decimal(d.item.max_supply)}</dd>
            <dt>Token URI</dt>
            <dd>
              <ExternalLink href={d.item.token_uri.startsWith('ipfs://') ? `/ipfs/${d.item.token_uri.slice(7)}` : d.item.token_uri}>
                {d.item.token_uri}
              </ExternalLink>
            </dd>
            <dt>Created</dt>
            <dd>
              <Time iso={d.item.created_at} />
            </dd>
          </dl>
          <Section title="Metadata">
            {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling block must take the keyboard focus to be scrolled without a mouse */}
            {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: its name is what a screen reader announces on that focus */}
            <pre class="json" tabIndex={0} aria-label="Metadata document">
              {JSON.stringify(d.item.metadata, null, 2)}
            </pre>
          </Section>
          <Section title={`Holders (${decimal(d.holders.length)})`}>
            <Table
              caption="Who holds this item, largest balance first"
              rows={d.holders}
              rowKey={(h) => h.user_uid}
              empty="Nobody holds it yet."
              columns={[
                { title: 'User', cell: (h) => <Uid value={h.user_uid} href={`/console/apps/${appUid}/users/${h.user_uid}`} label="user uid" /> },
                { title: 'Balance', cell: (h) => decimal(h.amount) },
              ]}
            />
          </Section>
          <Section title={`Mints (${decimal(d.mints.length)})`}>
            <Table
              caption="Mints of this item, newest first"
              rows={d.mints}
              rowKey={(m) => m.uid}
              empty="No mint yet."
              columns={[
                { title: 'UID', cell: (m) => <Uid value={m.uid} label="mint uid" /> },
                { title: 'To', cell: (m) => <Uid value={m.to_user_uid} href={`/console/apps/${appUid}/users/${m.to_user_uid}`} label="user uid" /> },
                { title: 'Amount', cell: (m) => decimal(m.amount) },
                { title: 'Nonce', cell: (m) => <Mono>{String(m.nonce)}</Mono> },
                { title: 'Status', cell: (m) => <Status value={m.status} title={m.reason} /> },
                { title: 'Created', cell: (m) => <Time iso={m.created_at} /> },
              ]}
            />
          </Section>
        </>
      )}
    </>
  );
}

/** The items a user holds, on their page. */
export function UserItems({ appUid, userUid }: { appUid: string; userUid: string }) {
  const held = useApi<ItemHolding[]>(`/apps/${appUid}/users/${encodeURIComponent(userUid)}/items`, () => 10000);
  return (
    <Section title={held.data ? `Items (${decimal(held.data.length)})` : 'Items'}>
      <ErrorBox error={held.error} />
      {!held.data ? (
        !held.error && <Loading />
      ) : (
        <Table
          caption="Items this user holds"
          rows={held.data}
          rowKey={(h) => h.item_uid}
          empty="No item."
          columns={[
            { title: 'Item', cell: (h) => <a href={itemHref(appUid, h.item_uid)}>{h.name}</a> },
            { title: 'Token id', cell: (h) => decimal(h.token_id) },
            { title: 'Balance', cell: (h) => decimal(h.amount) },
          ]}
        />
      )}
    </Section>
  );
}
