// The one table of status moves (src/domain/transitions.ts): every allowed move listed here by hand,
// every other refused; a mined transaction or a done record never goes back.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { canMove, finalStatuses, leavingFor, REWOUND, TRANSITIONS, type Machine, type StatusOf } from '../../src/domain/transitions.js';

const ALLOWED: { [M in Machine]: [StatusOf<M>, StatusOf<M>][] } = {
  chain_tx: [
    ['signed', 'sent'],
    ['signed', 'mined'],
    ['signed', 'reverted'],
    ['sent', 'mined'],
    ['sent', 'reverted'],
  ],
  asset_mint: [
    ['pending', 'minted'],
    ['pending', 'failed'],
    ['failed', 'minted'],
  ],
  transfer: [
    ['pending', 'done'],
    ['pending', 'cancelled'],
    ['cancelled', 'done'],
  ],
  burn: [
    ['pending', 'done'],
    ['pending', 'cancelled'],
    ['cancelled', 'done'],
  ],
  allocation: [
    ['pending', 'done'],
    ['pending', 'failed'],
    ['failed', 'done'],
  ],
  claim: [
    ['pending', 'done'],
    ['pending', 'failed'],
    ['failed', 'done'],
  ],
  collection: [
    ['deploying', 'deployed'],
    ['deploying', 'failed'],
    ['failed', 'deployed'],
  ],
  reward: [['deploying', 'deployed']],
};

describe('status transitions', () => {
  for (const machine of Object.keys(TRANSITIONS) as Machine[]) {
    it(`${machine}: exactly the listed moves are allowed`, () => {
      const statuses = Object.keys(TRANSITIONS[machine]) as StatusOf<typeof machine>[];
      const allowed = new Set((ALLOWED[machine] as [string, string][]).map(([a, b]) => `${a}->${b}`));
      for (const from of statuses)
        for (const to of statuses) assert.equal(canMove(machine, from, to), allowed.has(`${from}->${to}`), `${machine}: ${from} -> ${to}`);
    });
  }

  it('a mined transaction and a done record are final', () => {
    assert.deepEqual(finalStatuses('chain_tx').sort(), ['mined', 'reverted']);
    for (const m of ['transfer', 'burn', 'allocation', 'claim'] as const) assert.deepEqual(finalStatuses(m), ['done']);
    assert.deepEqual(finalStatuses('asset_mint'), ['minted']);
    assert.deepEqual(finalStatuses('collection'), ['deployed']);
  });

  it('an UPDATE leaving for a status names every status that may move there', () => {
    assert.deepEqual(leavingFor('chain_tx', 'reverted').sort(), ['sent', 'signed']);
    assert.deepEqual(leavingFor('transfer', 'done').sort(), ['cancelled', 'pending']);
    assert.deepEqual(leavingFor('transfer', 'cancelled'), ['pending']);
    assert.throws(() => leavingFor('chain_tx', 'signed'), /no status of chain_tx moves to signed/);
  });

  it('the one backward move is a rewind, back to sent', () => {
    assert.deepEqual([...REWOUND.from], ['mined', 'reverted']);
    assert.equal(REWOUND.to, 'sent');
  });
});
