// The services' context, built the one way every process builds it: the service, the CLI, the
// creates' thread and the tests.
import type { Logger } from 'pino';
import { freezeConfig, installationOf, type Config, type Installation } from '../config/config.js';
import type { ChainCtx, Ctx } from '../services/context.js';
import type { ChainSender } from '../chain/sender.js';
import type { Core } from './open-core.js';

/** The parts a context is built from: the store and secrets of `openCore`, and what the process adds. */
export interface ContextParts {
  config: Config;
  log: Logger;
  core: Pick<Core, 'store' | 'queue' | 'box' | 'keys'> & { homeChainId?: number };
  /** What the start agreed on (src/services/installation.ts); else the settings' own, with the core's home chain. */
  installation?: Installation;
  sender?: ChainSender;
}

/** The one way a context is built (the service, the CLI, tests): what every use case needs. */
export function buildContext({ config, log, core, sender, installation }: ContextParts): Ctx {
  return {
    config: freezeConfig(config),
    installation: installation ?? installationOf(config, { homeChainId: core.homeChainId }),
    db: core.store.db,
    dialect: core.store.dialect,
    queue: core.queue,
    box: core.box,
    log,
    keys: core.keys,
    groupCommit: core.store.groupCommit,
    ...(sender ? { sender, chains: new Map<number, ChainCtx>() } : {}),
  };
}
