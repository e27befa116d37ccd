// Entry point of the creates' thread (see boot/threads/creates-thread.ts): an AssetIntake on a store connection of
// its own, fed by the main thread and answering it.
import { parentPort, workerData } from 'node:worker_threads';
import { buildContext } from './boot/context.js';
import { createLogger } from './boot/logger.js';
import { openMigratedStore } from './boot/open-store.js';
import { JobQueue } from './jobs/queue.js';
import type { KeyRing } from './chain/keys.js';
import type { SecretBox } from './util/secretbox.js';
import { freezeConfig } from './config/config.js';
import { AssetIntake } from './services/assets/create.js';
import { adoptRowVersions } from './store/row-versions.js';
import { adoptWriteTurns } from './store/write-turns.js';
import { MEMORY_REPORT_MS, threadMemory } from './util/thread-memory.js';
import { toWireError, type CreatesThreadData, type FromCreates, type ToCreates, type WireAnswer } from './boot/threads/creates-thread.js';
import { CreatesOutbox } from './boot/threads/creates-outbox.js';

const data = workerData as CreatesThreadData;
const { rowVersions, writeTurns, installation } = data;
const config = freezeConfig(data.config); // a copy crossed the thread: frozen again
adoptRowVersions(rowVersions);
adoptWriteTurns(writeTurns, true);
const log = createLogger(config).child({ thread: 'creates' });
// The main thread's store runs the checkpoints. This thread's commits are not flushed one by one: the
// outbox flushes the WAL once before it sends a group's answers (creates-outbox.ts).
const store = await openMigratedStore(config, log, { store: { checkpoints: 'none', flushedBy: 'caller' } });
// A create writes rows and queues jobs: it signs nothing and seals no secret (a new user's wallet is a
// job, created in the workers). So this thread opens no key custody (no HSM session of its own) and no
// wallet keys, and loads no chain library: about 10 MB less heap. A use of either fails loudly.
const core = { store, queue: new JobQueue(store.db, store.dialect), box: notHeld<SecretBox>('secret box'), keys: notHeld<KeyRing>('wallet keys') };
const ctx = buildContext({ config, installation: freezeConfig(installation), log, core });
const port = parentPort!;

// Answers (and the job kinds to announce) go back in one message per answered group, flushed first.
const outbox = new CreatesOutbox(
  () => store.flushNow(),
  (m) => port.postMessage(m),
);
const intake = new AssetIntake(ctx, undefined, (kinds) => outbox.announceKinds(kinds));

let open = 0; // creates given and not answered yet
let stopRequested = false;
const stopWhenIdle = async () => {
  if (!stopRequested || open > 0) return;
  stopRequested = false; // once
  outbox.sendNow();
  await store.close();
  port.postMessage({ stopped: true } satisfies FromCreates);
  process.exit(0); // this thread only
};

port.on('message', (m: ToCreates) => {
  if ('creates' in m) {
    for (const c of m.creates) {
      open++;
      intake.submit(c.appUid, c.environment, c.params, c.idem).then(
        (r) => answer({ id: c.id, uid: r.uid }),
        (err) => answer({ id: c.id, error: toWireError(err) }),
      );
    }
  }
  if ('stop' in m) {
    stopRequested = true;
    void stopWhenIdle();
  }
});

function answer(a: WireAnswer): void {
  outbox.answer(a);
  open--;
  void stopWhenIdle();
}

// The thread's heap, for /metrics: a message every couple of seconds beside thousands of answers.
setInterval(() => port.postMessage({ memory: threadMemory('creates') } satisfies FromCreates), MEMORY_REPORT_MS).unref();
port.postMessage({ ready: true } satisfies FromCreates);

/** What this thread does not hold: any use is a bug in the create path, reported as such. */
function notHeld<T extends object>(what: string): T {
  return new Proxy({} as T, {
    get(_target, prop) {
      throw new Error(`the creates' thread holds no ${what} (used: ${String(prop)}); only the main and workers' threads do`);
    },
  });
}
