// The chains, for the operator: one page per chain with its head, base fee against the ceiling, its
// JSON-RPC providers, its relayers (balance, nonces, transactions in flight) and the transactions not
// confirmed yet, each stuck one with a Cancel action. Read live (every few seconds). Verify walks every
// record against the chain and lists the divergences, with a Fix that sets them to what the chain shows.
import { count, wei } from '../format';
import { post } from '../api';
import { useApi, useFocusHeading } from '../hooks';
import type { ChainOverview, ChainTxRow, ChainVerifyReport } from '../../../src/services/console/types';
import { useState } from 'preact/hooks';
import { ErrorBox, Loading, Mono, Section, Status, Table, Time, Uid, useAction } from '../ui';

const gwei = (v: number | null) => (v === null ? '—' : `${v.toLocaleString(undefined, { maximumFractionDigits: 3 })} gwei`);

export function ChainsPage() {
  const list = useApi<ChainOverview[]>('/ops/chains', () => 10000);
  const heading = useFocusHeading('chains');
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        Chains
      </h1>
      <ErrorBox error={list.error} />
      {!list.data ? (
        <Loading />
      ) : (
        <Table
          caption="Chains served"
          rows={list.data}
          rowKey={(c) => String(c.chain_id)}
          columns={[
            { title: 'Chain', cell: (c) => <a href={`/console/chains/${c.chain_id}`}>{c.name}</a> },
            { title: 'ID', cell: (c) => <Mono>{c.chain_id}</Mono> },
            { title: 'Status', cell: (c) => <Status value={c.status} /> },
            { title: 'Head', cell: (c) => <span data-volatile>{c.head ?? '—'}</span> },
            { title: 'Base fee', cell: (c) => <span data-volatile>{gwei(c.base_fee_gwei)}</span> },
            { title: 'Unconfirmed', cell: (c) => c.unconfirmed_transactions },
            { title: 'Stuck', cell: (c) => c.stuck_transactions },
          ]}
        />
      )}
    </>
  );
}

export function ChainPage({ chainId }: { chainId: string }) {
  const chain = useApi<ChainOverview>(`/ops/chains/${chainId}`, () => 3000);
  const txs = useApi<ChainTxRow[]>(`/ops/chains/${chainId}/transactions?limit=200`, () => 3000);
  const heading = useFocusHeading(`chain-${chainId}`);
  const cancel = useAction((id: number) => post<{ cancel_hash: string; broadcast: string }>(`/ops/chains/${chainId}/transactions/${id}/cancel`));
  const resync = useAction(() => post<{ accounts: unknown[] }>(`/ops/chains/${chainId}/resync`));
  const c = chain.data;
  const [report, setReport] = useState<ChainVerifyReport | null>(null);
  const verify = useAction((fix: boolean) => post<ChainVerifyReport>(`/ops/chains/${chainId}/verify`, { fix }));
  const onVerify = async (fix: boolean) => {
    if (fix && !confirm('Set every fixable record to what the chain shows? Each fix is audited and emits the webhook events that were missed.')) return;
    const r = await verify.run(fix);
    if (r) setReport(r);
  };

  const onCancel = async (t: ChainTxRow) => {
    if (
      !confirm(
        `Cancel transaction ${t.id} (${t.kind}, nonce ${t.nonce})? A 0-value transfer to itself takes its place; if it is mined first, the job fails as cancelled.`,
      )
    )
      return;
    if (await cancel.run(t.id)) txs.reload();
  };

  return (
    <>
      <div class="page-head">
        <h1 ref={heading} tabIndex={-1}>
          {c ? c.name : `Chain ${chainId}`}
        </h1>
        {c && (
          <p class="muted">
            Chain ID <Mono>{c.chain_id}</Mono> · {c.embedded ? 'embedded' : 'external'} · <Status value={c.status} />
          </p>
        )}
      </div>
      <ErrorBox error={chain.error} />
      {!c ? (
        <Loading />
      ) : (
        <>
          <Section title="Now">
            <dl class="stats">
              <div class="stat">
                <dt>Head</dt>
                <dd data-volatile>{c.head ?? '—'}</dd>
              </div>
              <div class="stat">
                <dt>Base fee</dt>
                <dd data-volatile>{gwei(c.base_fee_gwei)}</dd>
              </div>
              <div class="stat">
                <dt>Fee ceiling</dt>
                <dd>{c.max_fee_gwei === null ? 'none' : gwei(c.max_fee_gwei)}</dd>
              </div>
              <div class="stat">
                <dt>Unconfirmed</dt>
                <dd>{c.unconfirmed_transactions}</dd>
              </div>
              <div class="stat">
                <dt>Stuck</dt>
                <dd>{c.stuck_transactions}</dd>
              </div>
              <div class="stat">
                <dt>Low under</dt>
                {/* A threshold (it follows the fees): four decimals at most, rounded up; the exact value on hover. */}
                <dd data-volatile title={wei(c.low_balance_wei, c.currency)}>
                  {wei(c.low_balance_wei, c.currency, 4)}
                </dd>
              </div>
            </dl>
          </Section>
          <Section title="Providers">
            <Table
              caption="JSON-RPC providers, in order of preference"
              rows={c.providers}
              rowKey={(p) => p.provider}
              empty="No calls yet."
              columns={[
                { title: 'Provider', cell: (p) => <Mono>{p.provider}</Mono> },
                { title: 'State', cell: (p) => <Status value={p.state} title={p.last_error} /> },
                { title: 'Calls', cell: (p) => <span data-volatile>{count(p.calls)}</span> },
                { title: 'Errors', cell: (p) => count(p.errors) },
                { title: 'Latency', cell: (p) => (p.latency_ms === null ? '—' : `${p.latency_ms} ms`) },
                { title: 'Last error', cell: (p) => p.last_error ?? <span class="muted">—</span> },
              ]}
            />
          </Section>
          <Section
            title="Relayers"
            actions={
              <button type="button" onClick={() => resync.run().then(() => chain.reload())} disabled={resync.busy}>
                {resync.busy ? 'Resyncing…' : 'Resync nonces'}
              </button>
            }
          >
            <ErrorBox error={resync.error} />
            <Table
              caption="The chain's accounts"
              rows={c.relayers}
              rowKey={(r) => r.address}
              columns={[
                { title: 'Role', cell: (r) => r.role },
                { title: 'State', cell: (r) => r.state ?? '—' },
                { title: 'Address', cell: (r) => <Uid value={r.address} label="address" /> },
                {
                  title: 'Balance',
                  cell: (r) => (
                    <span class={r.low ? 'warn' : undefined} data-volatile>
                      {wei(r.balance_wei, c.currency)}
                      {r.low ? ' (low)' : ''}
                    </span>
                  ),
                },
                { title: 'Nonce', cell: (r) => r.nonce ?? '—' },
                { title: 'Pending', cell: (r) => r.pending_nonce ?? '—' },
                { title: 'Next', cell: (r) => r.next_nonce ?? '—' },
                { title: 'In flight', cell: (r) => r.in_flight },
              ]}
            />
          </Section>
        </>
      )}
      <Section
        title="Record against the chain"
        actions={
          <>
            <button type="button" onClick={() => onVerify(false)} disabled={verify.busy}>
              {verify.busy ? 'Verifying…' : 'Verify'}
            </button>
            {report?.divergences.some((d) => d.fixable && !d.fixed) && (
              <button type="button" class="danger" onClick={() => onVerify(true)} disabled={verify.busy}>
                Fix divergences
              </button>
            )}
          </>
        }
      >
        <ErrorBox error={verify.error} />
        {report ? (
          <VerifyResult report={report} />
        ) : (
          <p class="muted">Verify compares every record (contracts, assets, transfers, burns, rewards) with what the chain shows.</p>
        )}
      </Section>
      <Section title="Unconfirmed transactions">
        <ErrorBox error={txs.error ?? cancel.error} />
        {!txs.data ? (
          <Loading />
        ) : (
          <Table
            caption="Transactions not confirmed yet, oldest first"
            rows={txs.data}
            rowKey={(t) => String(t.id)}
            empty="Every transaction is confirmed."
            columns={[
              { title: 'Tx', cell: (t) => <Uid value={t.id} label="transaction id" /> },
              { title: 'Kind', cell: (t) => t.kind },
              {
                title: 'State',
                cell: (t) => (
                  <Status value={t.cancelling ? 'cancelling' : t.awaiting ? 'awaiting evidence' : t.stuck ? 'stuck' : t.status} title={t.awaiting} />
                ),
              },
              { title: 'From', cell: (t) => <Uid value={t.from} label="address" /> },
              { title: 'Nonce', cell: (t) => t.nonce },
              { title: 'Max fee', cell: (t) => gwei(t.max_fee_gwei) },
              { title: 'Replaced', cell: (t) => t.replacements },
              { title: 'Since', cell: (t) => <Time iso={t.created_at} /> },
              {
                title: 'Action',
                cell: (t) =>
                  t.cancellable ? (
                    <button type="button" class="danger" onClick={() => onCancel(t)} disabled={cancel.busy} aria-label={`Cancel transaction ${t.id}`}>
                      Cancel
                    </button>
                  ) : (
                    <span class="muted">—</span>
                  ),
              },
            ]}
          />
        )}
      </Section>
    </>
  );
}

const counts = (c: Record<string, number>) =>
  Object.entries(c)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${k.replace('_', ' ')}`)
    .join(', ') || 'none';
const side = (v: string | number | boolean | null) => (v === null ? '—' : String(v));

/** A verification's divergences (both sides of each) and its counts. */
function VerifyResult({ report }: { report: ChainVerifyReport }) {
  return (
    <>
      <p>
        Checked: {counts(report.checked)}. In flight (not judged): {counts(report.in_flight)}.
        {Object.values(report.unverified).some((n) => n > 0) && <> Not read (the chain did not answer): {counts(report.unverified)}.</>}
      </p>
      <Table
        caption="Divergences: what the record says, what the chain shows"
        rows={report.divergences}
        rowKey={(d) => `${d.kind}:${d.record.type}:${d.record.uid}:${d.field}`}
        empty="No divergence: every record checked agrees with the chain."
        columns={[
          { title: 'Kind', cell: (d) => d.kind },
          { title: 'Record', cell: (d) => <Mono>{`${d.record.type} ${d.record.uid}`}</Mono> },
          { title: 'App', cell: (d) => <a href={`/console/apps/${d.app_uid}`}>{d.app_uid}</a> },
          { title: 'Field', cell: (d) => d.field },
          { title: 'Recorded', cell: (d) => <Mono>{side(d.recorded)}</Mono> },
          { title: 'On chain', cell: (d) => <Mono>{side(d.on_chain)}</Mono> },
          { title: 'Fix', cell: (d) => (d.fixed ? <Status value={d.fixed} /> : d.fixable ? 'fixable' : <span class="muted">not fixable</span>) },
        ]}
      />
    </>
  );
}
