// Entry point of the workers' thread (see boot/threads/workers-thread.ts): the service with its workers and without
// the API, on the main thread's database and chain.
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from './boot/logger.js';
import { freezeConfig } from './config/config.js';
import { startService } from './boot/service.js';
import { adoptRowVersions } from './store/row-versions.js';
import { adoptWriteTurns } from './store/write-turns.js';
import { threadMemory } from './util/thread-memory.js';
import { PROVIDER_REPORT_MS, type FromWorkers, type ToWorkers, type WorkersThreadData } from './boot/threads/workers-thread.js';

const data = workerData as WorkersThreadData;
const { rowVersions, writeTurns, embeddedRpcUrl } = data;
const config = freezeConfig(data.config); // a copy crossed the thread: frozen again
adoptRowVersions(rowVersions);
adoptWriteTurns(writeTurns);
const log = createLogger(config).child({ thread: 'workers' });
try {
  os.setPriority(0, config.workerNice); // this thread only, on Linux
} catch (err) {
  log.warn({ err: (err as Error).message }, 'could not lower the workers thread priority (WORKER_NICE)');
}
const service = await startService(config, log, { embeddedRpcUrl });
const port = parentPort!;
const report = setInterval(
  () => port.postMessage({ providers: service.runtimes.flatMap((rt) => rt.providers.snapshot()), memory: threadMemory('workers') } satisfies FromWorkers),
  PROVIDER_REPORT_MS,
);
report.unref();
port.on('message', (m: ToWorkers) => {
  if ('wake' in m) for (const kind of m.wake) service.ctx.queue.notify(kind);
  if ('stop' in m) {
    clearInterval(report);
    void service.stop().then(() => {
      port.postMessage({ stopped: true } satisfies FromWorkers);
      port.close();
    });
  }
});
port.postMessage({ ready: true } satisfies FromWorkers);
