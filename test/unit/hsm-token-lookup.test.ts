// Opening a session on the token when the PKCS#11 library did not read it at its initialisation
// (SoftHSM2 beside another process that rewrites the token's file): the library is initialised again,
// a few times, by the thread that initialised it, and a refused PIN is never tried twice. A scripted
// module stands in for pkcs11js here; the real SoftHSM2 path runs in test/integration/production-hsm.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type * as Pkcs11Types from 'pkcs11js';
import { loggedInSession } from '../../src/custody/hsm.js';

const lib = { CKF_OS_LOCKING_OK: 2, CKF_RW_SESSION: 2, CKF_SERIAL_SESSION: 4, CKU_USER: 1 };
const settings = { module: '/usr/lib/softhsm/libsofthsm2.so', tokenLabel: 'mintworks', pin: '1234' };

/** A module that lists the token from its `listedFrom`-th initialisation on, and fails logins as told. */
function scriptedModule(listedFrom: number, loginErrors: string[] = []) {
  let initialisations = 1;
  const calls: string[] = [];
  const p11 = {
    C_GetSlotList: () => (initialisations >= listedFrom ? [Buffer.from([1])] : []),
    C_GetTokenInfo: () => ({ label: 'mintworks                       ' }),
    C_OpenSession: () => {
      calls.push('open');
      return Buffer.from([7]);
    },
    C_Login: () => {
      calls.push('login');
      const err = loginErrors.shift();
      if (err) throw new Error(err);
    },
    C_CloseSession: () => void calls.push('close'),
    C_Finalize: () => void calls.push('finalize'),
    C_Initialize: () => {
      initialisations++;
      calls.push('initialize');
    },
  };
  return { p11: p11 as unknown as Pkcs11Types.PKCS11, calls };
}

describe('opening a session on the token', () => {
  it('initialises the library again until it lists the token', () => {
    const m = scriptedModule(3);
    assert.deepEqual(loggedInSession(m.p11, lib, settings, true), Buffer.from([7]));
    assert.deepEqual(m.calls, ['finalize', 'initialize', 'finalize', 'initialize', 'open', 'login']);
  });

  it('gives up after five lookups', () => {
    const m = scriptedModule(Number.POSITIVE_INFINITY);
    assert.throws(() => loggedInSession(m.p11, lib, settings, true), /no token labelled "mintworks"/);
    assert.equal(m.calls.filter((c) => c === 'initialize').length, 4);
  });

  it('leaves a library another thread initialised as it is', () => {
    const m = scriptedModule(2);
    assert.throws(() => loggedInSession(m.p11, lib, settings, false), /no token labelled "mintworks"/);
    assert.deepEqual(m.calls, []);
  });

  it('tries again after CKR_GENERAL_ERROR, its session closed', () => {
    const m = scriptedModule(1, ['CKR_GENERAL_ERROR']);
    assert.deepEqual(loggedInSession(m.p11, lib, settings, true), Buffer.from([7]));
    assert.deepEqual(m.calls, ['open', 'login', 'close', 'finalize', 'initialize', 'open', 'login']);
  });

  it('never tries a refused PIN again', () => {
    const m = scriptedModule(1, ['CKR_PIN_INCORRECT', 'CKR_PIN_INCORRECT']);
    assert.throws(() => loggedInSession(m.p11, lib, settings, true), /PKCS11_PIN is wrong for token "mintworks"/);
    assert.deepEqual(m.calls, ['open', 'login', 'close']);
  });
});
