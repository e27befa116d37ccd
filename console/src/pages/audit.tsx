// The audit log of operator acts, newest first, and the check of its hash chain (docs/custody.md, Audit log).
import { qs } from '../api';
import { useApi, useFocusHeading } from '../hooks';
import { navigate, withQuery, type Location } from '../router';
import type { AuditCheck, AuditEntry, Page } from '../../../src/services/console/types';
import { ErrorBox, KeyValues, Loading, Mono, Pager, Table, Time, Uid } from '../ui';

const ACTIONS = [
  'master_key.rotated',
  'wallet.exported',
  'backup.created',
  'backup.restored',
  'custody.migrated',
  'app.created',
  'app.secret_rotated',
  'webhook.changed',
  'chain.tx_cancelled',
  'chain.resynced',
  'config.public_url_set',
  'operator.signed_in',
  'operator.sign_in_failed',
];

/** The chain check's verdict: intact (with the head to export), or the first broken link. */
function ChainCheck() {
  const check = useApi<AuditCheck>('/audit/verify');
  if (check.error) return <ErrorBox error={check.error} />;
  if (!check.data) return <Loading />;
  const c = check.data;
  return c.ok ? (
    <p class="notice" data-testid="audit-check">
      Chain intact: {c.entries} entries checked. Head <Uid value={`${c.head.seq}:${c.head.hash}`} label="head" keep={10} /> — keep a copy elsewhere to compare
      later.
    </p>
  ) : (
    <p class="error" role="alert" data-testid="audit-check">
      Chain broken at entry {c.broken?.seq}: {c.broken?.reason}
    </p>
  );
}

export function AuditPage({ loc }: { loc: Location }) {
  const action = loc.query.get('action') ?? '';
  const after = loc.query.get('after') ?? undefined;
  const entries = useApi<Page<AuditEntry>>(`/audit${qs({ action, cursor: after })}`);
  const heading = useFocusHeading('audit');
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        Audit log
      </h1>
      <p class="muted">
        Every operator act: keys and secrets, Apps, webhooks, chain tools, settings, backups, sign-ins. The database refuses to change or delete an entry, and
        each carries a hash over its content and the entry before it.
      </p>
      <ChainCheck />
      <div class="filters">
        <div class="field">
          <label for="audit-action">Action</label>
          <select id="audit-action" value={action} onChange={(e) => navigate(withQuery(loc, { action: e.currentTarget.value || undefined, after: undefined }))}>
            <option value="">all</option>
            {ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </div>
      </div>
      <ErrorBox error={entries.error} />
      {!entries.data ? (
        !entries.error && <Loading />
      ) : (
        <>
          <Table
            caption="Audit log, newest first"
            rows={entries.data.items}
            rowKey={(e) => e.uid}
            empty="Nothing recorded yet."
            columns={[
              { title: 'When', cell: (e) => <Time iso={e.created_at} /> },
              { title: 'Who', cell: (e) => `${e.actor}${e.actor_detail ? ` (${e.actor_detail})` : ''}` },
              { title: 'Action', cell: (e) => <Mono>{e.action}</Mono> },
              { title: 'App', cell: (e) => <Uid value={e.app_uid} href={e.app_uid && `/console/apps/${e.app_uid}`} label="App uid" /> },
              {
                title: 'User',
                cell: (e) => <Uid value={e.user_uid} href={e.app_uid && e.user_uid && `/console/apps/${e.app_uid}/users/${e.user_uid}`} label="user uid" />,
              },
              { title: 'Chain', cell: (e) => e.chain_id ?? <span class="muted">—</span> },
              { title: 'Details', cell: (e) => <KeyValues data={e.details} />, class: 'details' },
            ]}
          />
          <Pager loc={loc} next={entries.data.next_cursor} />
        </>
      )}
    </>
  );
}
