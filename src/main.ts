// `npm start`: the whole service in one process. Stops cleanly on SIGINT/SIGTERM (the embedded chain
// saves its state on the way out).
import { loadConfig, ConfigError } from './config.js';
import { createLogger, startService } from './service.js';

async function main(): Promise<void> {
  let config;
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
  let service;
  try {
    service = await startService(config, log);
  } catch (err) {
    log.fatal({ err: (err as Error).message }, 'mintworks failed to start');
    process.exit(1);
  }
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    await service.stop();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  service.chain?.onExit((code, signal) => {
    if (stopping) return;
    log.fatal({ code, signal }, 'the embedded chain exited unexpectedly; stopping');
    void shutdown('chain-exit').then(() => process.exit(1));
  });
}

void main();
