// The audit log of key and secret events, newest first (docs/custody.md, Audit log).
import { qs } from '../api';
import { useApi, useFocusHeading } from '../hooks';
import { navigate, withQuery, type Location } from '../router';
import type { AuditEntry, Page } from '../../../src/services/console/types';
import { ErrorBox, Loading, Mono, Pager, Table, Time } from '../ui';

const ACTIONS = ['master_key.rotated', 'wallet.exported', 'backup.created', 'backup.restored', 'custody.migrated', 'app.secret_rotated', 'operator.signed_in'];

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
      <p class="muted">Every act on keys and secrets: rotations, wallet exports, backups, custody changes, sign-ins. Nothing here is ever deleted.</p>
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
              { title: 'App', cell: (e) => (e.app_uid ? <a href={`/console/apps/${e.app_uid}`}>{e.app_uid}</a> : <span class="muted">—</span>) },
              {
                title: 'User',
                cell: (e) =>
                  e.user_uid && e.app_uid ? <a href={`/console/apps/${e.app_uid}/users/${e.user_uid}`}>{e.user_uid}</a> : <span class="muted">—</span>,
              },
              { title: 'Chain', cell: (e) => e.chain_id ?? <span class="muted">—</span> },
              { title: 'Details', cell: (e) => <Mono>{JSON.stringify(e.details)}</Mono> },
            ]}
          />
          <Pager loc={loc} next={entries.data.next_cursor} />
        </>
      )}
    </>
  );
}
