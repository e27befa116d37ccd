// Rewards (docs/api.md, Rewards) against a real service (HTTP + workers + embedded anvil), once per database:
// exact amounts end to end, idempotent allocations, a budget that cannot be oversubscribed, claims that
// pay the whole balance exactly once, withdrawal, and the 404/[] answers.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createPublicClient, getAddress, http, parseAbi, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { ApiClient, waitFor } from '../helpers/env.js';
import type { TestService } from '../helpers/service.js';
import { embeddedChain, type SuiteChain } from '../helpers/suite-chain.js';
import { createReward } from '../../src/services/rewards/index.js';
import { formatUnits, parseAmount } from '../../src/domain/amounts.js';
import { waitUntilBlockedBy } from '../helpers/pg-blocking.js';
import { allocationJobHandler, waitForDeployment } from '../../src/services/rewards/allocations-job.js';
import { DEPLOYMENT_WAIT_MS } from '../../src/services/collections/contract-deploy.js';
import { allocationsWaiting } from '../../src/services/rewards/deploy-job.js';
import type { Tx } from '../../src/store/db.js';
import { ALLOCATE_JOB, kindOn } from '../../src/jobs/kinds.js';
import { newUid } from '../../src/util/ids.js';
import type { Job } from '../../src/jobs/queue.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const erc20 = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function decimals() view returns (uint8)',
  'function totalSupply() view returns (uint256)',
]);
const freshAddress = (): Address => privateKeyToAddress(generatePrivateKey());

type TestApp = Awaited<ReturnType<TestService['newApp']>>;

export function rewardsSuite(db: 'sqlite' | 'postgres', chain: SuiteChain = embeddedChain): void {
  describe(`rewards on ${db}${chain === embeddedChain ? '' : `, ${chain.name}`}`, () => {
    let t: TestService;
    let app: TestApp;
    let other: TestApp;
    let admin: ApiClient;
    let reward: string; // supply 1000
    let contract: Address;

    const rpc = () => createPublicClient({ transport: http(chain.rpcUrl(t)) });
    const tokenBalance = (token: Address, owner: Address) => rpc().readContract({ address: token, abi: erc20, functionName: 'balanceOf', args: [owner] });
    const newUser = async (a: TestApp = app) => (await a.api.post('/user', {})).body.data.uid as string;

    async function newReward(supply: string, extra: { withdraw_receiver?: string } = {}): Promise<{ uid: string; contract: Address }> {
      const { uid } = await createReward(t.svc.ctx, app.uid, {
        name: `Points ${uid6()}`,
        token_name: 'Mint Points',
        token_symbol: 'MPT',
        supply,
        description: 'test pool',
        ...extra,
      });
      const r = await waitFor('reward deployed', async () => {
        const res = await app.api.get(`/reward/${uid}`);
        return res.body.data.status === 'deployed' ? res.body.data : null;
      });
      return { uid, contract: r.contract_address };
    }

    const allocate = (rewardUid: string, userUid: string, amount: unknown, nonce: unknown = `n-${uid6()}`, client: ApiClient = app.api) =>
      client.post('/reward/allocate', { reward_uid: rewardUid, to_user_uid: userUid, amount, nonce });

    const balance = async (rewardUid: string, userUid: string) => {
      const r = await app.api.get(`/reward/balance?reward_uid=${rewardUid}&user_uid=${userUid}`);
      assert.equal(r.status, 200, r.raw);
      return r.body.data.amount as number;
    };

    const waitStatus = (kind: 'allocate' | 'allocation' | 'claim', uid: string, status = 'done') =>
      waitFor(
        `${kind} ${uid} ${status}`,
        async () => {
          const r = await app.api.get(`/reward/${kind}/${uid}`);
          if (r.body.data.status === 'failed' && status !== 'failed') throw new Error(`${kind} ${uid} failed`);
          return r.body.data.status === status ? r.body.data : null;
        },
        60_000,
      );

    /** Stops (and restarts) block production. */
    const setMining = (on: boolean) => chain.setMining(t, on);

    const eventsOf = async (type: string) =>
      (await t.svc.ctx.db.selectFrom('events').select('payload').where('app_uid', '=', app.uid).where('type', '=', type).execute()).map((e) =>
        JSON.parse(e.payload),
      );

    before(async () => {
      t = await chain.start(db);
      [app, other] = await Promise.all([t.newApp(), t.newApp()]);
      admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
      ({ uid: reward, contract } = await newReward('1000'));
    });
    after(async () => {
      await t?.stop();
    });

    it('GET /reward/{uid}: the Reward object; the contract holds the whole supply with 18 decimals', async () => {
      const r = await app.api.get(`/reward/${reward}`);
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.body.data), [
        'uid',
        'name',
        'status',
        'token_type',
        'token_name',
        'created_at',
        'contract_address',
        'withdraw_receiver',
        'description',
        'explorer_url',
        'chain',
        'network',
        'chain_id',
      ]);
      const d = r.body.data;
      assert.equal(d.uid, reward);
      assert.equal(d.status, 'deployed');
      assert.equal(d.token_type, 'ERC20');
      assert.equal(d.token_name, 'Mint Points');
      assert.equal(d.description, 'test pool');
      assert.equal(d.contract_address, d.contract_address.toLowerCase(), 'addresses are answered in lower case');
      assert.equal(d.withdraw_receiver, t.svc.ctx.keys.deployer().address.toLowerCase(), 'defaults to the service deployer account');
      assert.equal(d.chain_id, chain.chainId);
      assert.match(d.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      assert.equal(await rpc().readContract({ address: contract, abi: erc20, functionName: 'decimals' }), 18);
      assert.equal(await tokenBalance(contract, contract), 1000n * 10n ** 18n);
    });

    it('a new reward reads deploying without a contract address until its contract is on chain', async () => {
      const { uid } = await createReward(t.svc.ctx, app.uid, { name: 'Fresh', token_name: 'Fresh', token_symbol: 'FRS', supply: 5 });
      const first = (await app.api.get(`/reward/${uid}`)).body.data;
      assert.ok(['deploying', 'deployed'].includes(first.status));
      assert.equal(first.contract_address === null, first.status === 'deploying');
      assert.equal(first.explorer_url === null, first.status === 'deploying');
      await waitFor('deployed', async () => (await app.api.get(`/reward/${uid}`)).body.data.status === 'deployed');
    });

    describe('allocate, balance, claim: exact to the last wei', () => {
      let user: string;
      let a1: string;
      let a2: string;
      let claimTo: Address;

      it('allocates 0.001 (number) and "1.5" (string): the balance reads 1.501 at once, both end done', async () => {
        user = await newUser();
        assert.deepEqual((await app.api.get(`/user/${user}`)).body.data.wallets, []);
        const r1 = await allocate(reward, user, 0.001, 'nonce-1');
        const r2 = await app.api.post('/reward/allocation', { reward_uid: reward, to_user_uid: user, amount: '1.5', nonce: 42 }); // the alias
        assert.equal(r1.status, 201, r1.raw);
        assert.equal(r2.status, 201, r2.raw);
        assert.deepEqual(Object.keys(r1.body.data), ['uid']);
        a1 = r1.body.data.uid;
        a2 = r2.body.data.uid;
        // Readable at once: accepted allocations count before they are on chain.
        assert.equal(await balance(reward, user), 1.501);
        // The allocation created the user's wallet.
        assert.equal((await app.api.get(`/user/${user}`)).body.data.wallets.length, 1);

        const d1 = await waitStatus('allocate', a1);
        const d2 = await waitStatus('allocation', a2);
        assert.deepEqual(Object.keys(d1), ['uid', 'reward_uid', 'to_user_uid', 'amount', 'nonce', 'created_at', 'status']);
        assert.deepEqual(
          { ...d1, created_at: '' },
          { uid: a1, reward_uid: reward, to_user_uid: user, amount: 0.001, nonce: 'nonce-1', created_at: '', status: 'done' },
        );
        assert.equal(d2.amount, 1.5);
        assert.equal(d2.nonce, 42, 'a numeric nonce is echoed as a number');
        assert.equal(await balance(reward, user), 1.501);
        const raw = await app.api.get(`/reward/balance?reward_uid=${reward}&user_uid=${user}`);
        assert.equal(raw.raw, `{"success":true,"data":{"reward_uid":"${reward}","user_uid":"${user}","amount":1.501}}`);

        const wallet = (await app.api.get(`/user/${user}`)).body.data.wallets[0].address as Address;
        const onChain = await rpc().readContract({
          address: contract,
          abi: parseAbi(['function allocated(address) view returns (uint256)']),
          functionName: 'allocated',
          args: [wallet],
        });
        assert.equal(onChain, 1_501_000_000_000_000_000n);
        const allocated = await eventsOf('reward.allocated');
        assert.deepEqual(
          allocated
            .map((e) => e.allocation.uid)
            .filter((u: string) => u === a1 || u === a2)
            .sort(),
          [a1, a2].sort(),
        );
        assert.equal(allocated.find((e) => e.allocation.uid === a1).allocation.status, 'done');
      });

      it('a repeated nonce is refused with client_error and allocates nothing', async () => {
        const before = (await admin.get(`/apps/${app.uid}/rewards/${reward}`)).body.data.unallocated;
        for (const nonce of ['nonce-1', 42, '42']) {
          const r = await allocate(reward, user, '5', nonce);
          assert.equal(r.status, 400, `nonce ${JSON.stringify(nonce)}: ${r.raw}`);
          assert.equal(r.body.error.type, 'client_error');
          assert.equal(r.body.error.detail.code, 'duplicate_nonce');
          assert.equal(r.body.error.detail.field_name, 'nonce');
        }
        // Two concurrent requests with one fresh nonce: exactly one is accepted.
        const race = await Promise.all([allocate(reward, user, '1', 'race-nonce'), allocate(reward, user, '1', 'race-nonce')]);
        assert.deepEqual(race.map((r) => r.status).sort(), [201, 400]);
        const raced = race.find((r) => r.status === 201)!.body.data.uid;
        await waitStatus('allocate', raced);
        assert.equal(await balance(reward, user), 2.501);
        assert.equal((await app.api.get(`/reward/allocate?user_uid=${user}`)).body.data.length, 3);
        assert.equal((await admin.get(`/apps/${app.uid}/rewards/${reward}`)).body.data.unallocated, formatUnits(parseAmount(before) - 10n ** 18n));
        // The nonce is per reward: another reward takes it.
        const { uid: second } = await newReward('10');
        assert.equal((await allocate(second, user, '1', 'nonce-1')).status, 201);
      });

      it('a claim to a fresh address pays the whole balance exactly; the balance is then 0', async () => {
        claimTo = freshAddress();
        const expected = parseAmount(String(await balance(reward, user)));
        assert.equal(expected, 2_501_000_000_000_000_000n);
        const r = await app.api.post('/reward/claim', { reward_uid: reward, from_user_uid: user, to_address: claimTo });
        assert.equal(r.status, 201, r.raw);
        const c = await waitStatus('claim', r.body.data.uid);
        assert.deepEqual(Object.keys(c), ['uid', 'reward_uid', 'from_user_uid', 'to_address', 'amount', 'created_at', 'status']);
        assert.equal(c.amount, 2.501);
        assert.equal(c.to_address, claimTo.toLowerCase());
        assert.equal(await tokenBalance(contract, claimTo), expected);
        assert.equal(await balance(reward, user), 0);
        const ev = (await eventsOf('reward.claimed')).find((e) => e.claim.uid === c.uid);
        assert.equal(ev.claim.amount, 2.501);
        assert.equal(ev.claim.status, 'done');
      });

      it('a claim accepted while its allocations are still on their way waits for them: exactly 1.501 x 10^18', async () => {
        const u2 = await newUser();
        // Hold the chain: the allocation transactions stay in the mempool while the claim job runs.
        await setMining(false);
        let claimUid: string;
        try {
          const [x, y] = await Promise.all([allocate(reward, u2, 0.001), allocate(reward, u2, '1.5')]);
          assert.equal(x.status, 201);
          assert.equal(y.status, 201);
          const c = await app.api.post('/reward/claim', { reward_uid: reward, from_user_uid: u2, to_address: freshAddress() });
          assert.equal(c.status, 201);
          claimUid = c.body.data.uid;
          // The claim job has looked at the claim and decided to wait (deferred), or (wrongly) finished it.
          await waitFor('the claim job to run', async () => {
            const claim = await t.svc.ctx.db.selectFrom('claims').select('status').where('uid', '=', claimUid).executeTakeFirstOrThrow();
            const job = await t.svc.ctx.db
              .selectFrom('jobs')
              .select(['status', 'created_at', 'updated_at'])
              .where('kind', '=', 'reward.claim')
              .where('ref', '=', claimUid)
              .executeTakeFirstOrThrow();
            return claim.status !== 'pending' || (job.status === 'queued' && job.updated_at > job.created_at);
          });
          const pending = (await app.api.get(`/reward/claim/${claimUid}`)).body.data;
          assert.equal(pending.status, 'pending', 'the claim must not execute before the allocations accepted before it');
          assert.equal(pending.amount, 0);
          assert.equal(await balance(reward, u2), 1.501);
        } finally {
          await setMining(true);
        }
        const done = await waitStatus('claim', claimUid);
        assert.equal(done.amount, 1.501);
        assert.equal(await tokenBalance(contract, getAddress(done.to_address)), 1_501_000_000_000_000_000n);
        assert.equal(await balance(reward, u2), 0);
      });

      it('a second claim completes done with amount 0, sends no transaction and moves nothing', async () => {
        const to = freshAddress();
        const r = await app.api.post('/reward/claim', { reward_uid: reward, from_user_uid: user, to_address: to });
        assert.equal(r.status, 201);
        const c = await waitStatus('claim', r.body.data.uid);
        assert.equal(c.amount, 0);
        assert.equal(await tokenBalance(contract, to), 0n);
        assert.equal(await tokenBalance(contract, claimTo), 2_501_000_000_000_000_000n);
        const txs = await t.svc.ctx.db.selectFrom('chain_txs').select('id').where('kind', '=', 'reward.claim').where('ref', '=', c.uid).execute();
        assert.equal(txs.length, 0);
        assert.ok((await eventsOf('reward.claimed')).some((e) => e.claim.uid === c.uid && e.claim.amount === 0));
      });

      it('20 concurrent claims: the on-chain total received equals the balance exactly, paid once', async () => {
        const amounts = [0.1, 0.2, '0.000000000000000007', '123.456789012345678'];
        const allocs = await Promise.all(amounts.map((a) => allocate(reward, user, a)));
        assert.ok(allocs.every((r) => r.status === 201));
        await Promise.all(allocs.map((r) => waitStatus('allocate', r.body.data.uid)));
        const expected = amounts.reduce<bigint>((s, a) => s + parseAmount(a), 0n);
        assert.equal(expected, 123_756_789_012_345_678_000n + 7n);
        const targets = Array.from({ length: 20 }, freshAddress);
        const posted = await Promise.all(targets.map((to) => app.api.post('/reward/claim', { reward_uid: reward, from_user_uid: user, to_address: to })));
        assert.ok(
          posted.every((r) => r.status === 201),
          posted.map((r) => r.raw).join('\n'),
        );
        const claims = await Promise.all(posted.map((r) => waitStatus('claim', r.body.data.uid)));
        const received = await Promise.all(targets.map((to) => tokenBalance(contract, to)));
        assert.equal(
          received.reduce((s, v) => s + v, 0n),
          expected,
        );
        assert.equal(received.filter((v) => v > 0n).length, 1, 'one claim took it all');
        // Claims of one user run one at a time: the others saw nothing left and sent no transaction.
        const txs = await t.svc.ctx.db
          .selectFrom('chain_txs')
          .select('id')
          .where('kind', '=', 'reward.claim')
          .where(
            'ref',
            'in',
            claims.map((c) => c.uid),
          )
          .execute();
        assert.equal(txs.length, 1);
        // What the claims report is what the chain paid, exactly.
        const reported = claims.map((c) => c.amount as number);
        assert.equal(reported.filter((a) => a > 0).length, 1);
        const paid = received.find((v) => v > 0n)!;
        const reportedUid = claims.find((c) => c.amount > 0).uid;
        const row = await t.svc.ctx.db.selectFrom('claims').select('amount').where('uid', '=', reportedUid).executeTakeFirstOrThrow();
        assert.equal(BigInt(row.amount!), paid);
        assert.equal(await balance(reward, user), 0);
        const mine = (await app.api.get(`/reward/claim?user_uid=${user}`)).body.data;
        assert.equal(mine.length, 22);
      });

      it('lists are newest first and scoped to the App', async () => {
        const list = (await app.api.get(`/reward/allocate?user_uid=${user}`)).body.data as { uid: string; created_at: string }[];
        assert.ok(list.length >= 7);
        const sorted = [...list].sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
        assert.deepEqual(
          list.map((a) => a.uid),
          sorted.map((a) => a.uid),
        );
        assert.equal(list.at(-1)!.uid, a1);
        assert.deepEqual((await app.api.get(`/reward/allocation?user_uid=${user}`)).body.data, list);
        assert.deepEqual((await other.api.get(`/reward/allocate?user_uid=${user}`)).body, { success: true, data: [] });
        assert.deepEqual((await other.api.get(`/reward/claim?user_uid=${user}`)).body, { success: true, data: [] });
        assert.equal((await other.api.get(`/reward/allocate/${a1}`)).status, 404);
        const claims = (await app.api.get(`/reward/claim?user_uid=${user}`)).body.data as { created_at: string }[];
        assert.deepEqual(
          claims.map((c) => c.created_at),
          claims
            .map((c) => c.created_at)
            .sort()
            .reverse(),
        );
      });

      it("users' wallets never hold native currency (claims are gasless)", async () => {
        const wallet = (await app.api.get(`/user/${user}`)).body.data.wallets[0].address as Address;
        assert.equal(await rpc().getBalance({ address: wallet }), 0n);
        const walletUsers = await t.svc.ctx.db.selectFrom('users').select('wallet_address').where('wallet_address', 'is not', null).execute();
        assert.ok(walletUsers.length >= 2);
        for (const w of walletUsers) assert.equal(await rpc().getBalance({ address: w.wallet_address as Address }), 0n);
      });
    });

    describe('validation and the budget', () => {
      it('amount: more than 18 decimals, negative, zero, non-numeric -> 400 validation_error on field amount', async () => {
        const user = await newUser();
        for (const amount of ['1e-19', '0.0000000000000000001', -1, '-1', 0, '0', 'abc', '', ' 1', '+1', '0x10', '1_000', null, true, [1], { v: 1 }]) {
          const r = await allocate(reward, user, amount);
          assert.equal(r.status, 400, `${JSON.stringify(amount)}: ${r.raw}`);
          assert.equal(r.body.error.type, 'validation_error', JSON.stringify(amount));
          const detail = Array.isArray(r.body.error.detail) ? r.body.error.detail[0] : r.body.error.detail;
          assert.equal(detail.field_name, 'amount', JSON.stringify(amount));
          assert.equal(Object.keys(detail).at(-1), 'message');
        }
        // Raw JSON numbers beyond 18 decimals, and a missing amount.
        const raw = await app.api.call('POST', '/reward/allocate', `{"reward_uid":"${reward}","to_user_uid":"${user}","amount":1e-19,"nonce":"x1"}`);
        assert.equal(raw.status, 400);
        assert.match(JSON.stringify(raw.body.error.detail), /more than 18 decimal places/);
        const missing = await app.api.post('/reward/allocate', { reward_uid: reward, to_user_uid: user, nonce: 'x2' });
        assert.equal(missing.status, 400);
        assert.equal(missing.body.error.detail.field_name, 'amount');
        assert.equal(missing.body.error.detail.message, 'This field is required.');
        assert.equal(await balance(reward, user), 0);
        assert.deepEqual((await app.api.get(`/reward/allocate?user_uid=${user}`)).body.data, []);
        // Accepted forms: "1e3" and a huge exact string.
        const big = await newReward('123456789012345678901234567890.5');
        assert.equal((await allocate(big.uid, user, '1e3')).status, 201);
        const huge = await allocate(big.uid, user, '123456789012345678901234566890.5');
        assert.equal(huge.status, 201, huge.raw);
        await waitStatus('allocate', huge.body.data.uid);
        const wallet = (await app.api.get(`/user/${user}`)).body.data.wallets[0].address as Address;
        const onChain = await rpc().readContract({
          address: big.contract,
          abi: parseAbi(['function allocated(address) view returns (uint256)']),
          functionName: 'allocated',
          args: [wallet],
        });
        assert.equal(onChain, 123_456_789_012_345_678_901_234_567_890_500_000_000_000_000_000n);
        const over = await allocate(big.uid, user, '0.000000000000000001');
        assert.equal(over.status, 400);
        assert.equal(over.body.error.detail.code, 'insufficient_supply');
      });

      it('to_address must be a valid address', async () => {
        const user = await newUser();
        for (const to_address of ['nope', '0x123', '0x0000000000000000000000000000000000000000', '0xAbCdEf000000000000000000000000000000000']) {
          const r = await app.api.post('/reward/claim', { reward_uid: reward, from_user_uid: user, to_address });
          assert.equal(r.status, 400, to_address);
          assert.equal(r.body.error.type, 'validation_error');
          assert.equal(r.body.error.detail.field_name, 'to_address');
        }
      });

      it('allocations beyond what the reward holds are refused clearly; concurrent ones cannot oversubscribe', async () => {
        const { uid: small, contract: smallContract } = await newReward('10');
        const user = await newUser();
        assert.equal((await allocate(small, user, 6)).status, 201);
        const over = await allocate(small, user, 5);
        assert.equal(over.status, 400);
        assert.equal(over.body.error.type, 'client_error');
        assert.equal(over.body.error.detail.code, 'insufficient_supply');
        assert.match(over.body.error.detail.message, /4 left to allocate/);
        // Ten concurrent requests of 1.5 against the 4 left: exactly two fit.
        const users = await Promise.all(Array.from({ length: 10 }, () => newUser()));
        const rs = await Promise.all(users.map((u) => allocate(small, u, '1.5')));
        assert.equal(rs.filter((r) => r.status === 201).length, 2, rs.map((r) => r.raw).join('\n'));
        assert.ok(rs.filter((r) => r.status !== 201).every((r) => r.status === 400 && r.body.error.detail.code === 'insufficient_supply'));
        assert.equal((await admin.get(`/apps/${app.uid}/rewards/${small}`)).body.data.unallocated, '1');
        const accepted = rs.filter((r) => r.status === 201).map((r) => r.body.data.uid);
        await Promise.all(accepted.map((uid) => waitStatus('allocate', uid)));
        const available = await rpc().readContract({
          address: smallContract,
          abi: parseAbi(['function available() view returns (uint256)']),
          functionName: 'available',
        });
        assert.equal(available, 10n ** 18n);
      });
    });

    describe('not found', () => {
      it('unknown reward -> 404 "Reward not found." on every reward endpoint (another App\'s reward too)', async () => {
        const user = await newUser();
        for (const rid of ['999999999999', 'abc', reward]) {
          const client = rid === reward ? other.api : app.api; // `reward` belongs to `app`, not `other`
          const u = rid === reward ? await newUser(other) : user;
          const calls = [
            client.get(`/reward/${rid}`),
            client.get(`/reward/balance?reward_uid=${rid}&user_uid=${u}`),
            client.post('/reward/allocate', { reward_uid: rid, to_user_uid: u, amount: 1, nonce: 'nf' }),
            client.post('/reward/allocation', { reward_uid: rid, to_user_uid: u, amount: '1', nonce: 'nf' }),
            client.post('/reward/claim', { reward_uid: rid, from_user_uid: u, to_address: freshAddress() }),
          ];
          for (const r of await Promise.all(calls)) {
            assert.equal(r.status, 404, `${rid}: ${r.raw}`);
            assert.deepEqual(r.body, { success: false, error: { type: 'client_error', detail: { code: 'not_found', message: 'Reward not found.' } } });
          }
        }
        const w = await admin.post(`/apps/${app.uid}/rewards/999999999999/withdraw`);
        assert.equal(w.status, 404);
        assert.equal(w.body.error.detail.message, 'Reward not found.');
      });

      it('unknown allocation, claim and user', async () => {
        for (const p of ['/reward/allocate/999999999999', '/reward/allocation/999999999999', '/reward/allocate/x']) {
          const r = await app.api.get(p);
          assert.equal(r.status, 404);
          assert.equal(r.body.error.detail.message, 'Allocation not found.');
        }
        const c = await app.api.get('/reward/claim/999999999999');
        assert.equal(c.status, 404);
        assert.equal(c.body.error.detail.message, 'Claim not found.');
        const alloc = await allocate(reward, '999999999999', 1);
        assert.equal(alloc.status, 404);
        assert.equal(alloc.body.error.detail.message, 'User not found.');
        const claim = await app.api.post('/reward/claim', { reward_uid: reward, from_user_uid: '999999999999', to_address: freshAddress() });
        assert.equal(claim.status, 404);
        assert.equal(claim.body.error.detail.message, 'User not found.');
      });

      it('lists for an unknown user are []; the balance of an unknown user is 0; no user_uid is Not Found', async () => {
        for (const p of ['/reward/allocate', '/reward/allocation', '/reward/claim']) {
          assert.deepEqual((await app.api.get(`${p}?user_uid=999999999999`)).body, { success: true, data: [] });
          assert.deepEqual((await app.api.get(`${p}?user_uid=nobody`)).body, { success: true, data: [] });
          assert.equal((await app.api.get(p)).status, 404);
        }
        assert.equal(await balance(reward, '999999999999'), 0);
        const noParams = await app.api.get('/reward/balance');
        assert.equal(noParams.status, 400);
        assert.equal(noParams.body.error.type, 'validation_error');
      });
    });

    describe('withdraw', () => {
      it('sends the remainder (unclaimed allocations included) to the receiver; later claims and allocations fail clearly', async () => {
        const receiver = freshAddress();
        const { uid: pool, contract: poolContract } = await newReward('100', { withdraw_receiver: receiver });
        assert.equal((await app.api.get(`/reward/${pool}`)).body.data.withdraw_receiver, receiver.toLowerCase());
        const [u1, u2] = await Promise.all([newUser(), newUser()]);
        const [x, y] = await Promise.all([allocate(pool, u1, '10.25'), allocate(pool, u2, 5)]);
        await Promise.all([waitStatus('allocate', x.body.data.uid), waitStatus('allocate', y.body.data.uid)]);
        const to = freshAddress();
        const claim = await app.api.post('/reward/claim', { reward_uid: pool, from_user_uid: u1, to_address: to });
        // Requested right after the claim: the claim accepted before it still completes, and is paid.
        const w = await admin.post(`/apps/${app.uid}/rewards/${pool}/withdraw`);
        assert.equal(w.status, 200, w.raw);
        assert.equal(w.body.data.withdraw_status, 'requested');
        assert.equal((await admin.post(`/apps/${app.uid}/rewards/${pool}/withdraw`)).status, 400);
        const c = await waitStatus('claim', claim.body.data.uid);
        assert.equal(c.amount, 10.25);
        await waitFor('withdrawn', async () => (await admin.get(`/apps/${app.uid}/rewards/${pool}`)).body.data.withdraw_status === 'done', 60_000);
        assert.equal(await tokenBalance(poolContract, to), 10_250_000_000_000_000_000n);
        assert.equal(await tokenBalance(poolContract, receiver), 89_750_000_000_000_000_000n); // 100 - 10.25, u2's 5 included
        assert.equal(await tokenBalance(poolContract, poolContract), 0n);
        assert.equal((await admin.get(`/apps/${app.uid}/rewards/${pool}`)).body.data.withdrawn_amount, '89.75');
        const ev = (await eventsOf('reward.withdrawn')).find((e) => e.reward.uid === pool);
        assert.equal(ev.reward.contract_address, poolContract);

        const late = await app.api.post('/reward/claim', { reward_uid: pool, from_user_uid: u2, to_address: to });
        assert.equal(late.status, 400);
        assert.equal(late.body.error.type, 'client_error');
        assert.equal(late.body.error.detail.code, 'reward_withdrawn');
        const lateAlloc = await allocate(pool, u2, 1);
        assert.equal(lateAlloc.status, 400);
        assert.equal(lateAlloc.body.error.detail.code, 'reward_withdrawn');
        assert.equal(await balance(pool, u2), 0, 'unclaimed allocations went to the receiver');
      });
    });

    describe('when the chain refuses', () => {
      it('an allocation fails with its reason and gives its amount back; a claim fails with its reason', async () => {
        const { uid: pool, contract: poolContract } = await newReward('10');
        const [u1, u2] = await Promise.all([newUser(), newUser()]);
        const a = await allocate(pool, u1, 3);
        await waitStatus('allocate', a.body.data.uid);
        // Close the pool behind the service's back: `withdrawn` is storage slot 7 of MintworksRewards.
        await chain.setStorageAt(t, poolContract, '0x7', `0x${'1'.padStart(64, '0')}`);
        const withdrawn = await rpc().readContract({
          address: poolContract,
          abi: parseAbi(['function withdrawn() view returns (bool)']),
          functionName: 'withdrawn',
        });
        assert.equal(withdrawn, true, 'the storage layout of MintworksRewards changed: update the slot of `withdrawn`');

        const b = await allocate(pool, u2, '2.5');
        assert.equal(b.status, 201);
        assert.equal((await admin.get(`/apps/${app.uid}/rewards/${pool}`)).body.data.unallocated, '4.5');
        const failed = await waitStatus('allocate', b.body.data.uid, 'failed');
        assert.equal(failed.reason, 'Reward has been withdrawn.');
        assert.equal(Object.keys(failed).at(-1), 'reason');
        assert.equal((await admin.get(`/apps/${app.uid}/rewards/${pool}`)).body.data.unallocated, '7', 'the failed 2.5 is back in the budget');
        assert.equal(await balance(pool, u2), 0);

        const to = freshAddress();
        const c = await app.api.post('/reward/claim', { reward_uid: pool, from_user_uid: u1, to_address: to });
        const cf = await waitStatus('claim', c.body.data.uid, 'failed');
        assert.equal(cf.reason, 'Reward has been withdrawn.');
        assert.equal(cf.amount, 0);
        assert.equal(await tokenBalance(poolContract, to), 0n);
        // The failed claim freed the user's claim slot: the next claim runs (and fails the same way).
        const c2 = await app.api.post('/reward/claim', { reward_uid: pool, from_user_uid: u1, to_address: to });
        await waitStatus('claim', c2.body.data.uid, 'failed');
        const wallet = (await app.api.get(`/user/${u1}`)).body.data.wallets[0].address as Address;
        assert.equal(await rpc().getBalance({ address: wallet }), 0n);
      });
    });

    describe('management', () => {
      it('the reward routes are in the OpenAPI document', async () => {
        const res = await fetch(`${t.svc.url}/openapi.json`);
        assert.equal(res.status, 200);
        const doc = (await res.json()) as {
          paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown> } }> } }>>;
        };
        for (const p of [
          '/v1/reward/{uid}',
          '/v1/reward/balance',
          '/v1/reward/allocate',
          '/v1/reward/allocate/{uid}',
          '/v1/reward/allocation',
          '/v1/reward/claim',
          '/v1/reward/claim/{uid}',
        ])
          assert.ok(doc.paths[p], p);
        const body = doc.paths['/v1/reward/allocate'].post.requestBody!.content['application/json'].schema;
        assert.deepEqual(Object.keys(body.properties), ['reward_uid', 'to_user_uid', 'amount', 'nonce']);
      });

      it('the admin API creates and lists rewards; validation names the field', async () => {
        const bad = await admin.post(`/apps/${app.uid}/rewards`, { name: 'X', token_name: 'X', token_symbol: 'X', supply: '1e-19' });
        assert.equal(bad.status, 400);
        assert.equal(bad.body.error.detail.field_name, 'supply');
        const badReceiver = await admin.post(`/apps/${app.uid}/rewards`, {
          name: 'X',
          token_name: 'X',
          token_symbol: 'X',
          supply: 1,
          withdraw_receiver: 'nope',
        });
        assert.equal(badReceiver.status, 400);
        assert.equal(badReceiver.body.error.detail.field_name, 'withdraw_receiver');
        assert.equal((await admin.post(`/apps/999999999999/rewards`, { name: 'X', token_name: 'X', token_symbol: 'X', supply: 1 })).status, 404);
        const created = await admin.post(`/apps/${app.uid}/rewards`, { name: 'Admin pool', token_name: 'Admin', token_symbol: 'ADM', supply: '2.5' });
        assert.equal(created.status, 201, created.raw);
        const list = (await admin.get(`/apps/${app.uid}/rewards`)).body.data as { uid: string; supply: string }[];
        assert.equal(list[0].uid, created.body.data.uid, 'newest first');
        assert.equal(list[0].supply, '2.5');
        assert.equal((await new ApiClient(`${t.svc.url}/admin/v1`).get(`/apps/${app.uid}/rewards`)).status, 401);
      });

      it('the CLI creates a reward (--json -> {uid}) and withdraws it', async () => {
        const env = { ...process.env, DATA_DIR: t.dataDir, DATABASE_URL: t.svc.ctx.config.databaseUrl ?? '', MASTER_KEY: '', LOG_LEVEL: 'silent' };
        const cli = async (...args: string[]) => {
          const out = await promisify(execFile)(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args, '--json'], {
            env,
            cwd: root,
          }).catch((err) => {
            throw new Error(`mintworks ${args.join(' ')}: ${err.stdout}${err.stderr}`);
          });
          return JSON.parse(out.stdout);
        };
        const receiver = freshAddress();
        const created = await cli(
          'reward',
          'create',
          '--app',
          app.uid,
          '--name',
          'CLI pool',
          '--token-name',
          'CLI Token',
          '--token-symbol',
          'CLI',
          '--supply',
          '7.5',
          '--withdraw-receiver',
          receiver,
        );
        assert.deepEqual(Object.keys(created), ['uid']);
        const r = await waitFor('deployed', async () => {
          const d = (await app.api.get(`/reward/${created.uid}`)).body.data;
          return d.status === 'deployed' ? d : null;
        });
        assert.equal(await tokenBalance(r.contract_address, r.contract_address), 7_500_000_000_000_000_000n);
        const w = await cli('reward', 'withdraw', '--app', app.uid, '--reward', created.uid);
        assert.equal(w.withdraw_status, 'requested');
        await waitFor('withdrawn', async () => (await tokenBalance(r.contract_address, receiver)) === 7_500_000_000_000_000_000n, 60_000);
        const err = await promisify(execFile)(
          process.execPath,
          [
            path.join(root, 'bin/mintworks.js'),
            'reward',
            'create',
            '--app',
            app.uid,
            '--name',
            'x',
            '--token-name',
            'x',
            '--token-symbol',
            'x',
            '--supply',
            '-1',
            '--json',
          ],
          { env, cwd: root },
        ).then(
          () => null,
          (e) => JSON.parse(e.stdout),
        );
        assert.match(err.error, /--supply: Amount must be greater than 0/);
      });
    });

    // An allocation job reads its reward and, when it is still deploying, defers itself until the
    // deployment's outcome wakes it. A wake-up between the two steps finds the job claimed, and used to
    // leave it to wait out its whole delay (5 s).
    describe('allocations waiting for their reward to deploy', () => {
      const chainCtx = () => t.svc.ctx.chains!.get(chain.chainId)!;
      /** A reward of its own, deployed, read as still deploying; its contract for its deployment's outcome. */
      async function deployingReward(): Promise<{ uid: string; contract: Address }> {
        const r = await newReward('10');
        await t.svc.ctx.db.updateTable('rewards').set({ status: 'deploying', contract_address: null }).where('uid', '=', r.uid).execute();
        return r;
      }
      /** A pending allocation of 1 base unit, as accepted, in no transaction yet. */
      async function pendingAllocation(rewardUid: string): Promise<string> {
        const uid = newUid();
        const at = new Date().toISOString();
        await t.svc.ctx.db
          .insertInto('allocations')
          .values({
            uid,
            app_uid: app.uid,
            reward_uid: rewardUid,
            to_user_uid: await newUser(),
            to_address: freshAddress().toLowerCase(),
            amount: '1',
            nonce: `n-${uid6()}`,
            nonce_is_number: 0,
            status: 'pending',
            error: null,
            tx_id: null,
            created_at: at,
            updated_at: at,
          })
          .execute();
        return uid;
      }
      /** The allocation's job as a worker holds it: running, leased far ahead, so the service's own workers leave it. */
      async function heldJob(rewardUid: string, allocationUid: string): Promise<Job<typeof ALLOCATE_JOB>> {
        const now = Date.now();
        const { id } = await t.svc.ctx.db
          .insertInto('jobs')
          .values({
            kind: kindOn(t.svc.ctx, ALLOCATE_JOB, chain.chainId),
            ref: allocationUid,
            group_key: rewardUid,
            payload: JSON.stringify({ round: 1 }),
            status: 'running',
            run_at: now,
            attempts: 1,
            max_attempts: 5,
            lease_until: now + 600_000,
            locked_by: 'test',
            last_error: null,
            created_at: now,
            updated_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        return { id, kind: ALLOCATE_JOB, ref: allocationUid, groupKey: rewardUid, payload: { round: 1 }, attempts: 1, maxAttempts: 5 };
      }
      /** What the deployment's outcome writes: the reward deployed, its waiting allocations woken. */
      async function deploymentOutcome(tx: Tx, r: { uid: string; contract: Address }): Promise<void> {
        await tx.updateTable('rewards').set({ status: 'deployed', contract_address: r.contract.toLowerCase() }).where('uid', '=', r.uid).execute();
        await allocationsWaiting(chainCtx())(tx, r.uid);
      }
      const jobRow = (id: number) => t.svc.ctx.db.selectFrom('jobs').select(['status', 'run_at']).where('id', '=', id).executeTakeFirstOrThrow();

      it('a reward deployed after its allocation was read: the allocation is due at once, not in 5 s, and goes out; one still deploying waits', async () => {
        const ctx = chainCtx();
        const [meanwhile, later] = await Promise.all([deployingReward(), deployingReward()]);
        const [a1, a2] = await Promise.all([pendingAllocation(meanwhile.uid), pendingAllocation(later.uid)]);
        const [j1, j2] = await Promise.all([heldJob(meanwhile.uid, a1), heldJob(later.uid, a2)]);
        // Both were read deploying; then the first one's deployment committed (and woke nothing: its job is claimed).
        await ctx.db.transaction().execute((tx) => deploymentOutcome(tx, meanwhile));
        const before = Date.now();
        await waitForDeployment(ctx, [
          { job: j1, rewardUid: meanwhile.uid },
          { job: j2, rewardUid: later.uid },
        ]);
        const r1 = await jobRow(j1.id);
        assert.ok(Number(r1.run_at) <= Date.now(), `due in ${Number(r1.run_at) - Date.now()} ms`);
        const r2 = await jobRow(j2.id);
        assert.equal(r2.status, 'queued');
        assert.ok(Number(r2.run_at) >= before + DEPLOYMENT_WAIT_MS, 'a reward still deploying: its allocation waits');
        await waitStatus('allocation', a1);
        // Its deployment's outcome wakes it.
        await ctx.db.transaction().execute((tx) => deploymentOutcome(tx, later));
        assert.ok(Number((await jobRow(j2.id)).run_at) <= Date.now(), 'woken by the deployment');
        await waitStatus('allocation', a2);
      });

      // PostgreSQL runs the two transactions side by side (SQLite takes them one at a time).
      if (db === 'postgres')
        it("a deployment's outcome committing while an allocation job defers itself: the job waits for it, reads the reward deployed, and is due at once", async () => {
          const ctx = chainCtx();
          const r = await deployingReward();
          const allocation = await pendingAllocation(r.uid);
          const job = await heldJob(r.uid, allocation);
          const handled = await ctx.db.transaction().execute(async (tx) => {
            await deploymentOutcome(tx, r);
            // The job reads its allocation on another connection (the reward deploying: not committed
            // yet) and goes to defer itself.
            let done = false;
            const handled = allocationJobHandler(ctx)
              .handle([job])
              .then(() => {
                done = true;
              });
            await waitUntilBlockedBy('the allocation job waiting for this transaction', tx, ctx.db);
            assert.equal(done, false, 'the job waits');
            return { handled };
          });
          await handled.handled;
          const row = await jobRow(job.id);
          assert.ok(Number(row.run_at) <= Date.now(), `due in ${Number(row.run_at) - Date.now()} ms, not left to wait ${DEPLOYMENT_WAIT_MS} ms`);
          await waitStatus('allocation', allocation);
        });
    });
  });
}

const uid6 = () => Math.random().toString(36).slice(2, 8);
