import { useEffect, useState } from 'preact/hooks';
import { patch, type ApiFailure } from '../api';
import { useApi, useFocusHeading } from '../hooks';
import type { CollectionRow } from '../../../src/services/console/types';
import { ErrorBox, ExternalLink, Field, Loading, Mono, Section, Status, Time, Uid, onInput, useAction } from '../ui';

/** The changeable options as the forms hold them: text, '' for none. */
export interface OptionValues {
  royalty_receiver: string;
  royalty_bps: string;
  image_url: string;
  external_url: string;
}
export const NO_OPTIONS: OptionValues = { royalty_receiver: '', royalty_bps: '', image_url: '', external_url: '' };

/** What the forms send: empty texts as null, the rate as a number. */
export function optionsBody(v: OptionValues) {
  return {
    royalty_receiver: v.royalty_receiver.trim() || null,
    royalty_bps: v.royalty_bps.trim() === '' ? null : Number(v.royalty_bps),
    image_url: v.image_url.trim() || null,
    external_url: v.external_url.trim() || null,
  };
}

export function royaltyText(c: Pick<CollectionRow, 'royalty_bps' | 'royalty_receiver'>): string {
  return c.royalty_bps === null ? 'none' : `${(c.royalty_bps / 100).toLocaleString('en', { maximumFractionDigits: 2 })} %`;
}

/** The royalty and contract-document fields, shared by the new-collection form and the collection's page. */
export function OptionFields(props: { prefix: string; values: OptionValues; onChange: (v: OptionValues) => void; error?: ApiFailure }) {
  const { prefix, values, onChange, error } = props;
  const set = (k: keyof OptionValues) => onInput((v: string) => onChange({ ...values, [k]: v }));
  return (
    <>
      <Field label="Royalty receiver" id={`${prefix}-royalty-receiver`} hint="ERC-2981: an address (0x…), with a rate" error={error?.field('royalty_receiver')}>
        <input id={`${prefix}-royalty-receiver`} maxLength={42} value={values.royalty_receiver} onInput={set('royalty_receiver')} />
      </Field>
      <Field label="Royalty (basis points)" id={`${prefix}-royalty-bps`} hint="0–1000: 250 = 2.5 %" error={error?.field('royalty_bps')}>
        <input id={`${prefix}-royalty-bps`} type="number" min={0} max={1000} step={1} value={values.royalty_bps} onInput={set('royalty_bps')} />
      </Field>
      <Field label="Image URL" id={`${prefix}-image-url`} hint="the collection's image, shown by marketplaces" error={error?.field('image_url')}>
        <input id={`${prefix}-image-url`} type="url" maxLength={2000} value={values.image_url} onInput={set('image_url')} />
      </Field>
      <Field label="External URL" id={`${prefix}-external-url`} error={error?.field('external_url')}>
        <input id={`${prefix}-external-url`} type="url" maxLength={2000} value={values.external_url} onInput={set('external_url')} />
      </Field>
    </>
  );
}

/** One collection: what it is on chain, and a change of its royalty or contract document. */
export function CollectionPage({ appUid, collectionUid }: { appUid: string; collectionUid: string }) {
  const base = `/apps/${appUid}/collections/${encodeURIComponent(collectionUid)}`;
  const collection = useApi<CollectionRow>(base, (c) => (c?.status === 'deploying' ? 1500 : 15000));
  const heading = useFocusHeading(`collection-${collectionUid}`);
  const c = collection.data;
  const [description, setDescription] = useState('');
  const [options, setOptions] = useState(NO_OPTIONS);
  const [saved, setSaved] = useState(false);
  // The form starts from the record (again once a change is saved).
  useEffect(() => {
    if (!c) return;
    setDescription(c.description ?? '');
    setOptions({
      royalty_receiver: c.royalty_receiver ?? '',
      royalty_bps: c.royalty_bps === null ? '' : String(c.royalty_bps),
      image_url: c.image_url ?? '',
      external_url: c.external_url ?? '',
    });
  }, [c?.contract_uri]);
  const save = useAction(() => patch<null>(base, { description: description || null, ...optionsBody(options) }));
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    if ((await save.run()) !== undefined) {
      setSaved(true);
      collection.reload();
    }
  };

  return (
    <>
      <p class="back">
        <a href={`/console/apps/${appUid}/collections`}>← Collections</a>
      </p>
      <h1 ref={heading} tabIndex={-1}>
        {c ? c.name : `Collection ${collectionUid}`}
      </h1>
      <ErrorBox error={collection.error} />
      {!c ? (
        !collection.error && <Loading />
      ) : (
        <>
          <Section title="Collection">
            <dl class="props">
              <dt>UID</dt>
              <dd>
                <Mono>{c.uid}</Mono>
              </dd>
              <dt>Status</dt>
              <dd>
                <Status value={c.status} />
              </dd>
              <dt>Contract</dt>
              <dd>{c.contract_address ? <Uid value={c.contract_address} href={c.explorer_url} external label="address" /> : '—'}</dd>
              <dt>Symbol</dt>
              <dd>{c.symbol ?? '—'}</dd>
              <dt>Editable assets</dt>
              <dd>{c.editable_assets ? 'yes' : 'no'}</dd>
              <dt>Soulbound</dt>
              <dd>{c.soulbound ? 'yes: tokens can be burned, never transferred' : 'no'}</dd>
              <dt>Royalty</dt>
              <dd>
                {royaltyText(c)}
                {c.royalty_receiver && (
                  <>
                    {' to '}
                    <Mono>{c.royalty_receiver}</Mono>
                  </>
                )}
              </dd>
              <dt>Contract document</dt>
              <dd>
                <ExternalLink href={c.contract_uri?.startsWith('ipfs://') ? `/ipfs/${c.contract_uri.slice(7)}` : c.contract_uri}>{c.contract_uri}</ExternalLink>
              </dd>
              <dt>Created</dt>
              <dd>
                <Time iso={c.created_at} />
              </dd>
            </dl>
            <p>
              <a href={`/console/apps/${appUid}/assets?collection=${c.uid}`}>Assets of this collection</a>
            </p>
          </Section>
          <Section title="Royalty and contract document">
            <form class="card form" onSubmit={submit} aria-label="Royalty and contract document">
              <Field label="Description" id="edit-description" error={save.error?.field('description')}>
                <textarea id="edit-description" rows={2} maxLength={2000} value={description} onInput={onInput(setDescription)} />
              </Field>
              <OptionFields prefix="edit" values={options} onChange={setOptions} error={save.error} />
              <ErrorBox error={save.error} />
              <button type="submit" class="primary" disabled={save.busy}>
                Save changes
              </button>
              {saved && (
                <p role="status" class="muted">
                  Saved: the new contract document is recorded, and the contract follows within a block or two.
                </p>
              )}
            </form>
          </Section>
        </>
      )}
    </>
  );
}
