import { useState } from 'preact/hooks';
import { post } from '../api';
import { useApi, useFocusHeading } from '../hooks';
import type { AppCredentials, AppSummary, Environment } from '../../../src/services/console/types';
import { ErrorBox, Field, Loading, onInput, Secret, Table, Time, Uid, useAction } from '../ui';

export function AppsPage() {
  const apps = useApi<AppSummary[]>('/apps');
  const heading = useFocusHeading('apps');
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [environment, setEnvironment] = useState<Environment>('development');
  const [created, setCreated] = useState<(AppCredentials & { name: string }) | null>(null);
  const create = useAction(() => post<AppCredentials>('/apps', { name, environment }));

  const submit = async (e: Event) => {
    e.preventDefault();
    const r = await create.run();
    if (r) {
      setCreated({ ...r, name });
      setName('');
      setOpen(false);
      apps.reload();
    }
  };

  return (
    <>
      <div class="page-head">
        <h1 ref={heading} tabIndex={-1}>
          Apps
        </h1>
        <button type="button" class="primary" aria-expanded={open} aria-controls="new-app" onClick={() => setOpen(!open)}>
          New App
        </button>
      </div>
      {open && (
        <form id="new-app" class="card form" onSubmit={submit} aria-label="New App">
          <Field label="Name" id="app-name" error={create.error?.field('name')}>
            <input id="app-name" required maxLength={100} value={name} onInput={onInput(setName)} />
          </Field>
          <Field label="Environment" id="app-environment" hint="Production Apps store metadata on IPFS (ipfs:// token URIs).">
            <select id="app-environment" value={environment} onChange={(e) => setEnvironment(e.currentTarget.value as Environment)}>
              <option value="development">development</option>
              <option value="production">production</option>
            </select>
          </Field>
          <ErrorBox error={create.error} />
          <div class="form-actions">
            <button type="submit" class="primary" disabled={create.busy}>
              Create App
            </button>
            <button type="button" onClick={() => setOpen(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {created && (
        <div class="card callout" role="status" aria-live="polite">
          <h2>App “{created.name}” created</h2>
          <p>
            Copy the secret now: it is shown only this once. UID <Uid value={created.uid} label="uid" /> ·{' '}
            <a href={`/console/apps/${created.uid}`}>Open the App</a>
          </p>
          <Secret label="API key" value={created.api_key} />
          <Secret label="API secret" value={created.api_secret} />
          <button type="button" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      )}
      <ErrorBox error={apps.error} />
      {!apps.data ? (
        <Loading />
      ) : (
        <Table
          caption="Apps"
          rows={apps.data}
          rowKey={(a) => a.uid}
          empty="No App yet: create one with New App."
          columns={[
            { title: 'Name', cell: (a) => <a href={`/console/apps/${a.uid}`}>{a.name}</a> },
            { title: 'UID', cell: (a) => <Uid value={a.uid} label="uid" /> },
            { title: 'Environment', cell: (a) => <span class={`env ${a.environment}`}>{a.environment}</span> },
            { title: 'API key', cell: (a) => <Uid value={a.api_key} label="API key" /> },
            { title: 'Created', cell: (a) => <Time iso={a.created_at} /> },
          ]}
        />
      )}
    </>
  );
}
