import { useState } from 'preact/hooks';
import { post } from '../api';
import { NO_OPTIONS, OptionFields, optionsBody, royaltyText } from './collection';
import { useApi, useFocusHeading } from '../hooks';
import type { ChainOption, CollectionRow } from '../../../src/services/console/types';
import { ErrorBox, Field, Loading, onInput, Section, Status, Table, Time, Uid, useAction } from '../ui';

export function CollectionsPage({ appUid }: { appUid: string }) {
  // Live: while a collection deploys, the list is read again every 1.5 s until it shows deployed.
  const list = useApi<CollectionRow[]>(`/apps/${appUid}/collections`, (d) => (d?.some((c) => c.status === 'deploying') ? 1500 : 15000));
  const heading = useFocusHeading(`collections-${appUid}`);
  const [name, setName] = useState('');
  const [symbol, setSymbol] = useState('');
  const [description, setDescription] = useState('');
  const [editable, setEditable] = useState(false);
  const [soulbound, setSoulbound] = useState(false);
  const [options, setOptions] = useState(NO_OPTIONS);
  const [chainId, setChainId] = useState<number | null>(null); // null: the default chain
  const chains = useApi<ChainOption[]>('/chains', () => false);
  const [created, setCreated] = useState<string | null>(null);
  const create = useAction(() =>
    post<{ uid: string }>(`/apps/${appUid}/collections`, {
      name,
      symbol,
      description: description || null,
      editable_assets: editable,
      chain_id: chainId,
      soulbound,
      ...optionsBody(options),
    }),
  );

  const submit = async (e: Event) => {
    e.preventDefault();
    const r = await create.run();
    if (r) {
      setCreated(r.uid);
      setName('');
      setSymbol('');
      setDescription('');
      setEditable(false);
      setSoulbound(false);
      setOptions(NO_OPTIONS);
      list.reload();
    }
  };

  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        Collections
      </h1>
      <ErrorBox error={list.error} />
      {!list.data ? (
        <Loading />
      ) : (
        <Table
          caption="Collections, newest first"
          rows={list.data}
          rowKey={(c) => c.uid}
          empty="No collection yet."
          columns={[
            { title: 'Name', cell: (c) => <a href={`/console/apps/${appUid}/collections/${c.uid}`}>{c.name}</a> },
            { title: 'UID', cell: (c) => <Uid value={c.uid} label="uid" /> },
            { title: 'Symbol', cell: (c) => c.symbol ?? '—' },
            { title: 'Editable assets', cell: (c) => (c.editable_assets ? 'yes' : 'no') },
            { title: 'Soulbound', cell: (c) => (c.soulbound ? 'yes' : 'no') },
            { title: 'Royalty', cell: (c) => royaltyText(c) },
            { title: 'Status', cell: (c) => <Status value={c.status} /> },
            {
              title: 'Contract',
              cell: (c) =>
                c.contract_address ? <Uid value={c.contract_address} href={c.explorer_url} external label="address" /> : <span class="muted">—</span>,
            },
            { title: 'Created', cell: (c) => <Time iso={c.created_at} /> },
          ]}
        />
      )}
      <Section title="New collection">
        <form class="card form" onSubmit={submit} aria-label="New collection">
          <Field label="Name" id="collection-name" error={create.error?.field('name')}>
            <input id="collection-name" required maxLength={100} value={name} onInput={onInput(setName)} />
          </Field>
          <Field label="Symbol" id="collection-symbol" hint="1–16 letters or digits, e.g. SWD" error={create.error?.field('symbol')}>
            <input
              id="collection-symbol"
              required
              maxLength={16}
              pattern="[A-Za-z0-9]{1,16}"
              value={symbol}
              onInput={onInput(setSymbol)}
              aria-describedby="collection-symbol-hint"
            />
          </Field>
          <Field label="Description" id="collection-description" wide>
            <textarea id="collection-description" rows={2} maxLength={2000} value={description} onInput={onInput(setDescription)} />
          </Field>
          {(chains.data?.length ?? 0) > 1 && (
            <Field label="Chain" id="collection-chain" error={create.error?.field('chain_id')}>
              <select id="collection-chain" value={String(chainId ?? chains.data![0].chain_id)} onChange={(e) => setChainId(Number(e.currentTarget.value))}>
                {chains.data!.map((c) => (
                  <option value={String(c.chain_id)}>
                    {c.name} ({c.chain_id})
                  </option>
                ))}
              </select>
            </Field>
          )}
          <OptionFields prefix="collection" values={options} onChange={setOptions} error={create.error} />
          <div class="check">
            <input id="collection-editable" type="checkbox" checked={editable} onChange={(e) => setEditable(e.currentTarget.checked)} />
            <label for="collection-editable">Editable assets</label>
          </div>
          <div class="check">
            <input id="collection-soulbound" type="checkbox" checked={soulbound} onChange={(e) => setSoulbound(e.currentTarget.checked)} />
            <label for="collection-soulbound">Soulbound: tokens can be burned, never transferred (fixed once created)</label>
          </div>
          <ErrorBox error={create.error} />
          <div class="form-actions">
            <button type="submit" class="primary" disabled={create.busy}>
              Create collection
            </button>
            {created && (
              <span role="status" class="muted">
                Collection <Uid value={created} label="uid" /> created: its contract is deploying.
              </span>
            )}
          </div>
        </form>
      </Section>
    </>
  );
}
