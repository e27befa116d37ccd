// `npm start`: the whole service. The API (and the embedded chain) run on the main thread, the workers
// in a thread of their own (src/boot/threads/workers-thread.ts; WORKER_THREAD=false keeps them on the main thread).
// Stops cleanly on SIGINT/SIGTERM: the workers first, then the API, then the embedded chain (which saves
// its state on the way out).
import { loadConfig, ConfigError, withRole, type Config } from './config/config.js';
import { createLogger } from './boot/logger.js';
import { startService, type Service } from './boot/service.js';
import { WorkersThread } from './boot/threads/workers-thread.js';

// Long: the process's signals, start and stop share the state of one start.
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config);
  let service: Service | null = null;
  let workers: WorkersThread | null = null;
  let stopping = false;
  let requested: string | null = null; // a stop asked for while starting: carried out once started
  const shutdown = async (reason: string, code = 0) => {
    if (!service) return void (requested ??= reason);
    if (stopping) return;
    stopping = true;
    log.info({ reason }, 'shutting down');
    await workers?.stop();
    await service.stop();
    log.info('stopped');
    process.exit(code);
  };
  // From the very start: a signal during start-up must not kill the process before it can stop the
  // embedded chain it started.
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  // `npm start` passes SIGTERM and SIGINT on (the script execs node), but a supervisor may also kill
  // whatever started us without a word: a parent that is gone stops the service as SIGTERM would, so
  // nothing is left holding the ports.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void shutdown('parent exited');
  }, 500).unref();

  try {
    if (config.runApi && config.runWorkers && config.workerThread) {
      let thread: WorkersThread | null = null;
      const api = await startService(withRole(config, { runWorkers: false }), log, {
        workers: () => thread?.status() ?? { thread: true, running: false },
        remoteProviders: () => thread?.providers() ?? [],
        workersMemory: () => thread?.memory() ?? null,
      });
      thread = new WorkersThread({ config: withRole(config, { runApi: false, demoApp: false }), embeddedRpcUrl: api.chain ? api.rpcUrl : undefined, log });
      workers = thread;
      api.ctx.queue.forwardNotifications((kind) => thread!.wake(kind));
      await thread.start().catch(async (err) => {
        await api.stop();
        throw err;
      });
      service = api;
    } else {
      service = await startService(config, log);
    }
  } catch (err) {
    log.fatal({ err: (err as Error).message }, 'mintworks failed to start');
    process.exit(1);
  }
  service.onFatal((err) => {
    if (stopping) return;
    log.fatal({ err: err.message }, 'mintworks cannot go on; stopping');
    void shutdown('fatal', 1);
  });
  if (requested) await shutdown(requested);
}

void main();
