import { count, wei } from '../format';
import { useState } from 'preact/hooks';
import { useApi, useFocusHeading } from '../hooks';
import type { Activity, ActivityRange, ChainStatus, Overview } from '../../../src/services/console/types';
import { ErrorBox, Loading, Section, Status, Time, Uid } from '../ui';
import { ActivityChart } from '../chart';

type Stat = [string, number | undefined, string?];
/** Counts that say something is waiting or went wrong. */
const ATTENTION = new Set(['Assets pending', 'Assets failed', 'Transfers pending', 'Webhook events retrying']);

function Stats({ list, tone }: { list: Stat[]; tone?: 'attention' }) {
  return (
    <dl class={`stats ${tone ?? ''}`}>
      {list.map(([label, value, href]) => (
        <div class="stat" key={label}>
          <dt>{label}</dt>
          <dd>{href ? <a href={href}>{count(value ?? 0)}</a> : count(value ?? 0)}</dd>
        </div>
      ))}
    </dl>
  );
}

export function OverviewPage({ appUid }: { appUid: string }) {
  const overview = useApi<Overview>(`/apps/${appUid}/overview`, () => 5000);
  const [range, setRange] = useState<ActivityRange>('24h');
  const activity = useApi<Activity>(`/apps/${appUid}/activity?range=${range}`, () => 15000);
  const status = useApi<ChainStatus>('/status', () => 5000);
  const heading = useFocusHeading(`overview-${appUid}`);
  const o = overview.data;
  const c = o?.counts;

  const stats: Stat[] = c
    ? [
        ['Users', c.users, `/console/apps/${appUid}/users`],
        ['Assets minted', c.assets_minted, `/console/apps/${appUid}/assets?status=minted`],
        ['Assets pending', c.assets_pending, `/console/apps/${appUid}/assets?status=not_minted`],
        ['Assets failed', c.assets_failed, `/console/apps/${appUid}/assets?status=failed`],
        ['Assets burned', c.assets_burned, `/console/apps/${appUid}/assets?status=burned`],
        ['Transfers', c.transfers],
        ['Transfers pending', c.transfers_pending, `/console/apps/${appUid}/assets?status=transferring`],
        ['Burns', c.burns],
        ['Collections', c.collections, `/console/apps/${appUid}/collections`],
        ['Rewards', c.rewards, `/console/apps/${appUid}/rewards`],
        ['Allocations', c.allocations],
        ['Claims', c.claims],
        ['Webhook events retrying', c.webhook_failing, `/console/apps/${appUid}/webhook?status=pending`],
      ]
    : [];
  const attention = stats.filter(([label, v]) => ATTENTION.has(label) && (v ?? 0) > 0);
  const present = stats.filter(([label, v]) => !ATTENTION.has(label) && (v ?? 0) > 0);
  const zeros = stats.filter(([, v]) => (v ?? 0) === 0);

  return (
    <>
      <div class="page-head">
        <h1 ref={heading} tabIndex={-1}>
          {o ? o.app.name : 'Overview'}
        </h1>
        {o && (
          <p class="muted">
            UID <Uid value={o.app.uid} label="uid" /> · {o.app.environment} · created <Time iso={o.app.created_at} />
          </p>
        )}
      </div>
      <ErrorBox error={overview.error} />
      {!c ? (
        <Loading />
      ) : (
        <Section title="At a glance">
          {/* What needs attention first, then what there is; the zeros folded away. */}
          {attention.length > 0 && <Stats list={attention} tone="attention" />}
          <Stats list={present} />
          {zeros.length > 0 && (
            <details class="zeros">
              <summary>
                {zeros.length} at zero: {zeros.map(([label]) => label.toLowerCase()).join(', ')}
              </summary>
              <Stats list={zeros} />
            </details>
          )}
        </Section>
      )}
      <Section
        title="Mints and sales"
        actions={
          <fieldset class="segmented" aria-label="Time range">
            {(['24h', '30d'] as const).map((r) => (
              <button type="button" key={r} aria-pressed={range === r} onClick={() => setRange(r)}>
                {r === '24h' ? 'Last 24 hours' : 'Last 30 days'}
              </button>
            ))}
          </fieldset>
        }
      >
        <ErrorBox error={activity.error} />
        {activity.data && activity.data.range === range ? <ActivityChart activity={activity.data} label="Mints and sales over time" /> : <Loading />}
      </Section>
      <Section title="Chain and relayers">
        <ErrorBox error={status.error} />
        {!status.data ? (
          <Loading />
        ) : (
          <div class="grid2">
            <dl class="props">
              <dt>Status</dt>
              <dd>
                <Status value={status.data.ready ? (status.data.status === 'ok' ? 'ok' : status.data.status) : 'unreachable'} />
              </dd>
              <dt>Chain</dt>
              <dd>
                {status.data.chain.name} (id {status.data.chain.chain_id}){status.data.chain.embedded ? ', embedded' : ''}
              </dd>
              <dt>Latest block</dt>
              <dd data-volatile>{status.data.chain.block ?? '—'}</dd>
              <dt>Unconfirmed transactions</dt>
              <dd>{status.data.unconfirmed_transactions}</dd>
              <dt>Jobs waiting</dt>
              <dd>
                {Object.entries(status.data.jobs)
                  .filter(([k]) => k.endsWith('.queued'))
                  .reduce((n, [, v]) => n + v, 0)}
              </dd>
            </dl>
            <div>
              <h3>Relayers</h3>
              <ul class="plain">
                {status.data.relayers.map((r) => (
                  <li key={r.address}>
                    <Uid value={r.address} label="address" />{' '}
                    <span data-volatile>{r.balance_wei.startsWith('-') ? 'balance unknown' : wei(r.balance_wei)}</span>{' '}
                    {r.low && <span class="badge bad">low balance</span>}
                  </li>
                ))}
              </ul>
            </div>
          </div>
        )}
      </Section>
    </>
  );
}
