// The embedded chain kept running for a service: a node that dies is started again on its saved state
// (the same URL, so nothing else changes); what the restart rewound is found by the tracker's
// reconciliation and sent again.
import type { Logger } from 'pino';
import { startEmbeddedChain, type EmbeddedChain, type EmbeddedChainOptions } from './embedded-chain.js';

const RESTART_ATTEMPTS = 3;
const RESTART_BACKOFF_MS = 500;

export interface SupervisedChain {
  /** The node running now (replaced by each restart). */
  readonly current: EmbeddedChain;
  /** A restart is under way: the chain cannot take work until it is over. */
  readonly restarting: boolean;
  /** Stops whichever node runs then. */
  stop(): Promise<void>;
}

export interface SupervisionOptions {
  /** The service's logger: the restarts are the service's news, not the node's. */
  log: Logger;
  /**
   * Aborted as soon as the service starts stopping (before its parts stop one by one), so that a node
   * that dies during the shutdown is not started again.
   */
  signal: AbortSignal;
  /** Called when the node died and could not be started again: the service cannot go on. */
  onFatal(err: Error): void;
}

/** Starts the embedded chain and restarts it, up to 3 times with a growing pause, each time it dies. */
export async function startSupervisedChain(chainOptions: EmbeddedChainOptions, opts: SupervisionOptions): Promise<SupervisedChain> {
  const { log, signal } = opts;
  let chain = await startEmbeddedChain(chainOptions);
  let restarting = false;
  const supervise = (c: EmbeddedChain) =>
    c.onExit(async () => {
      restarting = true;
      for (let attempt = 1; attempt <= RESTART_ATTEMPTS && !signal.aborted; attempt++) {
        await new Promise((r) => setTimeout(r, RESTART_BACKOFF_MS * attempt));
        if (signal.aborted) return;
        try {
          chain = await startEmbeddedChain(chainOptions);
          if (signal.aborted) return void (await chain.stop()); // the service stopped meanwhile: no orphan
          supervise(chain);
          restarting = false;
          log.warn({ attempt }, 'the embedded chain was restarted');
          return;
        } catch (err) {
          log.error({ err: (err as Error).message, attempt }, 'restarting the embedded chain failed');
        }
      }
      if (!signal.aborted) opts.onFatal(new Error('the embedded chain died and could not be restarted'));
    });
  supervise(chain);
  return {
    get current() {
      return chain;
    },
    get restarting() {
      return restarting;
    },
    stop: () => chain.stop(),
  };
}
