import { amount as inUnits } from '../format';
import { useState } from 'preact/hooks';
import { post, qs } from '../api';
import { useApi, useFocusHeading } from '../hooks';
import type { Location } from '../router';
import type { AllocationRow, ClaimRow, Page, RewardRow } from '../../../src/services/console/types';
import { ErrorBox, Field, Loading, onInput, Pager, Section, Status, Table, Time, Uid, useAction } from '../ui';

export function RewardsPage({ appUid }: { appUid: string }) {
  const list = useApi<RewardRow[]>(`/apps/${appUid}/rewards`, (d) =>
    d?.some((r) => r.status === 'deploying' || r.withdraw_status === 'requested') ? 1500 : 15000,
  );
  const heading = useFocusHeading(`rewards-${appUid}`);
  const [name, setName] = useState('');
  const [tokenName, setTokenName] = useState('');
  const [tokenSymbol, setTokenSymbol] = useState('');
  const [supply, setSupply] = useState('');
  const [receiver, setReceiver] = useState('');
  const create = useAction(() =>
    post<{ uid: string }>(`/apps/${appUid}/rewards`, {
      name,
      token_name: tokenName,
      token_symbol: tokenSymbol,
      supply,
      ...(receiver.trim() ? { withdraw_receiver: receiver.trim() } : {}),
    }),
  );
  const [created, setCreated] = useState<string | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    const r = await create.run();
    if (r) {
      setCreated(r.uid);
      setName('');
      setTokenName('');
      setTokenSymbol('');
      setSupply('');
      setReceiver('');
      list.reload();
    }
  };

  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        Rewards
      </h1>
      <ErrorBox error={list.error} />
      {!list.data ? (
        <Loading />
      ) : (
        <Table
          caption="Rewards, newest first"
          rows={list.data}
          rowKey={(r) => r.uid}
          empty="No reward yet."
          columns={[
            { title: 'Name', cell: (r) => <a href={`/console/apps/${appUid}/rewards/${r.uid}`}>{r.name}</a> },
            { title: 'UID', cell: (r) => <Uid value={r.uid} label="uid" /> },
            { title: 'Token', cell: (r) => `${r.token_name} (${r.token_symbol})` },
            { title: 'Supply', cell: (r) => inUnits(r.supply, r.token_symbol), class: 'num' },
            { title: 'Unallocated', cell: (r) => inUnits(r.unallocated, r.token_symbol), class: 'num' },
            { title: 'Status', cell: (r) => <Status value={r.status} /> },
            { title: 'Withdrawal', cell: (r) => (r.withdraw_status ? <Status value={r.withdraw_status} /> : <span class="muted">—</span>) },
          ]}
        />
      )}
      <Section title="New reward">
        <form class="card form" onSubmit={submit} aria-label="New reward">
          <Field label="Name" id="reward-name" error={create.error?.field('name')}>
            <input id="reward-name" required maxLength={100} value={name} onInput={onInput(setName)} />
          </Field>
          <Field label="Token name" id="reward-token-name" error={create.error?.field('token_name')}>
            <input id="reward-token-name" required maxLength={100} value={tokenName} onInput={onInput(setTokenName)} />
          </Field>
          <Field label="Token symbol" id="reward-token-symbol" error={create.error?.field('token_symbol')}>
            <input id="reward-token-symbol" required maxLength={16} value={tokenSymbol} onInput={onInput(setTokenSymbol)} />
          </Field>
          <Field label="Supply" id="reward-supply" hint="Whole tokens (up to 18 decimals), e.g. 1000000" error={create.error?.field('supply')}>
            <input id="reward-supply" required inputMode="decimal" value={supply} onInput={onInput(setSupply)} aria-describedby="reward-supply-hint" />
          </Field>
          <Field
            label="Withdraw receiver (optional)"
            id="reward-receiver"
            wide
            hint="Address that receives what is left on withdrawal; default: the service's deployer"
            error={create.error?.field('withdraw_receiver')}
          >
            <input id="reward-receiver" class="mono" value={receiver} onInput={onInput(setReceiver)} aria-describedby="reward-receiver-hint" />
          </Field>
          <ErrorBox error={create.error} />
          <div class="form-actions">
            <button type="submit" class="primary" disabled={create.busy}>
              Create reward
            </button>
            {created && (
              <span role="status" class="muted">
                Reward <Uid value={created} label="uid" /> created: its contract is deploying.
              </span>
            )}
          </div>
        </form>
      </Section>
    </>
  );
}

export function RewardPage({ appUid, rewardUid, loc }: { appUid: string; rewardUid: string; loc: Location }) {
  const base = `/apps/${appUid}/rewards/${encodeURIComponent(rewardUid)}`;
  const reward = useApi<RewardRow>(base, (r) => (r && (r.status === 'deploying' || r.withdraw_status === 'requested') ? 1500 : 10000));
  const aAfter = loc.query.get('allocations_after') ?? undefined;
  const cAfter = loc.query.get('claims_after') ?? undefined;
  const busy = (rows?: { status: string }[]) => rows?.some((r) => r.status === 'pending');
  const allocations = useApi<Page<AllocationRow>>(`${base}/allocations${qs({ cursor: aAfter })}`, (d) => (busy(d?.items) ? 1500 : aAfter ? false : 5000));
  const claims = useApi<Page<ClaimRow>>(`${base}/claims${qs({ cursor: cAfter })}`, (d) => (busy(d?.items) ? 1500 : cAfter ? false : 5000));
  const heading = useFocusHeading(`reward-${rewardUid}`);

  const [toUser, setToUser] = useState('');
  const [amount, setAmount] = useState('');
  const [nonce, setNonce] = useState('');
  const alloc = useAction(() =>
    post<{ uid: string }>(`${base}/allocations`, { to_user_uid: toUser, amount, ...(nonce.trim() ? { nonce: nonce.trim() } : {}) }),
  );
  const [fromUser, setFromUser] = useState('');
  const [toAddress, setToAddress] = useState('');
  const claim = useAction(() => post<{ uid: string }>(`${base}/claims`, { from_user_uid: fromUser, to_address: toAddress }));
  const [confirmWithdraw, setConfirmWithdraw] = useState(false);
  const withdraw = useAction(() => post<RewardRow>(`${base}/withdraw`));
  const [message, setMessage] = useState<string | null>(null);

  const r = reward.data;
  return (
    <>
      <p class="back">
        <a href={`/console/apps/${appUid}/rewards`}>← Rewards</a>
      </p>
      <h1 ref={heading} tabIndex={-1}>
        {r ? r.name : `Reward ${rewardUid}`}
      </h1>
      <ErrorBox error={reward.error} />
      {message && (
        <p role="status" class="notice">
          {message}
        </p>
      )}
      {!r ? (
        !reward.error && <Loading />
      ) : (
        <>
          <dl class="props">
            <dt>UID</dt>
            <dd>
              <Uid value={r.uid} label="uid" />
            </dd>
            <dt>Token</dt>
            <dd>
              {r.token_name} ({r.token_symbol})
            </dd>
            <dt>Status</dt>
            <dd>
              <Status value={r.status} /> {r.contract_address && <Uid value={r.contract_address} href={r.explorer_url} external label="address" />}
            </dd>
            <dt>Supply</dt>
            <dd>{inUnits(r.supply, r.token_symbol)}</dd>
            <dt>Unallocated</dt>
            <dd>{inUnits(r.unallocated, r.token_symbol)}</dd>
            <dt>Withdraw receiver</dt>
            <dd>
              <Uid value={r.withdraw_receiver} label="address" />
            </dd>
            <dt>Withdrawal</dt>
            <dd>
              {r.withdraw_status ? <Status value={r.withdraw_status} /> : 'not requested'}
              {r.withdrawn_amount && ` · ${inUnits(r.withdrawn_amount, r.token_symbol)} withdrawn`} {r.withdrawn_at && <Time iso={r.withdrawn_at} />}
            </dd>
          </dl>

          <Section title="Allocate">
            <form
              class="card form"
              aria-label="Allocate"
              onSubmit={async (e) => {
                e.preventDefault();
                const res = await alloc.run();
                if (res) {
                  setMessage(`Allocation ${res.uid} accepted.`);
                  setAmount('');
                  setNonce('');
                  allocations.reload();
                  reward.reload();
                }
              }}
            >
              <Field label="User uid" id="alloc-user" error={alloc.error?.field('to_user_uid')}>
                <input id="alloc-user" required value={toUser} onInput={onInput(setToUser)} />
              </Field>
              <Field label="Amount" id="alloc-amount" error={alloc.error?.field('amount')}>
                <input id="alloc-amount" required inputMode="decimal" value={amount} onInput={onInput(setAmount)} />
              </Field>
              <Field
                label="Nonce (optional)"
                id="alloc-nonce"
                hint="Unique per reward; a repeated nonce is refused. Default: a new one."
                error={alloc.error?.field('nonce')}
              >
                <input id="alloc-nonce" value={nonce} onInput={onInput(setNonce)} aria-describedby="alloc-nonce-hint" />
              </Field>
              <ErrorBox error={alloc.error} />
              <div class="form-actions">
                <button type="submit" class="primary" disabled={alloc.busy || r.withdraw_status !== null}>
                  Allocate
                </button>
              </div>
            </form>
          </Section>

          <Section title="Allocations">
            <ErrorBox error={allocations.error} />
            {allocations.data ? (
              <>
                <Table
                  caption="Allocations of this reward, newest first"
                  rows={allocations.data.items}
                  rowKey={(a) => a.uid}
                  empty="No allocation yet."
                  columns={[
                    { title: 'UID', cell: (a) => <Uid value={a.uid} label="uid" /> },
                    { title: 'User', cell: (a) => <Uid value={a.to_user_uid} href={`/console/apps/${appUid}/users/${a.to_user_uid}`} label="user uid" /> },
                    { title: 'Amount', cell: (a) => inUnits(a.amount, r.token_symbol), class: 'num' },
                    { title: 'Nonce', cell: (a) => <Uid value={String(a.nonce)} label="nonce" /> },
                    { title: 'Status', cell: (a) => <Status value={a.status} title={a.reason} /> },
                    { title: 'Created', cell: (a) => <Time iso={a.created_at} /> },
                  ]}
                />
                <Pager loc={loc} next={allocations.data.next_cursor} param="allocations_after" />
              </>
            ) : (
              <Loading />
            )}
          </Section>

          <Section title="Claim for a user">
            <form
              class="card form"
              aria-label="Claim for a user"
              onSubmit={async (e) => {
                e.preventDefault();
                const res = await claim.run();
                if (res) {
                  setMessage(`Claim ${res.uid} accepted: it pays the user's whole unclaimed balance.`);
                  claims.reload();
                }
              }}
            >
              <Field label="User uid" id="claim-user" error={claim.error?.field('from_user_uid')}>
                <input id="claim-user" required value={fromUser} onInput={onInput(setFromUser)} />
              </Field>
              <Field label="To address" id="claim-address" wide error={claim.error?.field('to_address')}>
                <input id="claim-address" class="mono" required value={toAddress} onInput={onInput(setToAddress)} />
              </Field>
              <ErrorBox error={claim.error} />
              <div class="form-actions">
                <button type="submit" disabled={claim.busy || r.withdraw_status !== null}>
                  Claim
                </button>
              </div>
            </form>
          </Section>

          <Section title="Claims">
            <ErrorBox error={claims.error} />
            {claims.data ? (
              <>
                <Table
                  caption="Claims of this reward, newest first"
                  rows={claims.data.items}
                  rowKey={(c) => c.uid}
                  empty="No claim yet."
                  columns={[
                    { title: 'UID', cell: (c) => <Uid value={c.uid} label="uid" /> },
                    { title: 'User', cell: (c) => <Uid value={c.from_user_uid} href={`/console/apps/${appUid}/users/${c.from_user_uid}`} label="user uid" /> },
                    { title: 'Amount', cell: (c) => inUnits(c.amount, r.token_symbol), class: 'num' },
                    { title: 'To', cell: (c) => <Uid value={c.to_address} label="address" /> },
                    { title: 'Status', cell: (c) => <Status value={c.status} title={c.reason} /> },
                    { title: 'Created', cell: (c) => <Time iso={c.created_at} /> },
                  ]}
                />
                <Pager loc={loc} next={claims.data.next_cursor} param="claims_after" />
              </>
            ) : (
              <Loading />
            )}
          </Section>

          <Section title="Withdraw">
            <p>
              Sends everything the reward contract still holds, unclaimed allocations included, to the withdraw receiver, and closes the reward: no more
              allocations or claims.
            </p>
            <ErrorBox error={withdraw.error} />
            {r.withdraw_status ? (
              <p>
                Withdrawal <Status value={r.withdraw_status} />
              </p>
            ) : confirmWithdraw ? (
              <fieldset class="row" aria-label="Confirm withdrawal">
                <button
                  type="button"
                  class="danger"
                  disabled={withdraw.busy}
                  onClick={async () => {
                    if (await withdraw.run()) {
                      setConfirmWithdraw(false);
                      reward.reload();
                    }
                  }}
                >
                  Yes, withdraw and close
                </button>
                <button type="button" onClick={() => setConfirmWithdraw(false)}>
                  Cancel
                </button>
              </fieldset>
            ) : (
              <button type="button" class="danger" onClick={() => setConfirmWithdraw(true)}>
                Withdraw
              </button>
            )}
          </Section>
        </>
      )}
    </>
  );
}
