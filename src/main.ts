// `npm start`: the whole service. The API (and the embedded chain) run on the main thread, the workers
// in a thread of their own (src/worker-thread.ts; WORKER_THREAD=false keeps them on the main thread).
// Stops cleanly on SIGINT/SIGTERM: the workers first, then the API, then the embedded chain (which saves
// its state on the way out).
import { loadConfig, ConfigError, type Config } from './config.js';
import { createLogger, startService, type Service } from './service.js';
import { WorkersThread } from './worker-thread.js';

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
  let service: Service;
  let workers: WorkersThread | null = null;
  try {
    if (config.runApi && config.runWorkers && config.workerThread) {
      let thread: WorkersThread | null = null;
      service = await startService({ ...config, runWorkers: false }, log, { workers: () => thread?.status() ?? { thread: true, running: false } });
      const rpc = service.chain ? { embeddedRpcUrl: service.rpcUrl } : {};
      thread = new WorkersThread({ config: { ...config, ...rpc, runApi: false, demoApp: false }, log });
      workers = thread;
      service.ctx.queue.forwardNotifications((kind) => thread!.wake(kind));
      await thread.start().catch(async (err) => {
        await service.stop();
        throw err;
      });
    } else {
      service = await startService(config, log);
    }
  } catch (err) {
    log.fatal({ err: (err as Error).message }, 'mintworks failed to start');
    process.exit(1);
  }
  let stopping = false;
  const shutdown = async (signal: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    await workers?.stop();
    await service.stop();
    log.info('stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  service.chain?.onExit((code, signal) => {
    if (stopping) return;
    log.fatal({ code, signal }, 'the embedded chain exited unexpectedly; stopping');
    void shutdown('chain-exit', 1);
  });
}

void main();
