// The API side of a process that serves it (API): the thread POST /asset's creates are written in, and
// the HTTP server with what its cached reads need to stay current.
import type { FastifyInstance } from 'fastify';
import type { Booting } from './open-core.js';
import type { Ctx } from '../services/context.js';
import type { ChainRuntime } from '../chain/runtime.js';
import type { Health } from '../http/root.js';
import { buildHttp } from '../http/app.js';
import { AssetIntake, writeCreatesWith } from '../services/assets/create.js';
import { CreatesThread } from './threads/creates-thread.js';
import { bindError } from './bind.js';
import { admissionOf } from '../services/assets/admission.js';
import type { ThreadMemory } from '../util/thread-memory.js';
import type { CreatesWaits } from '../http/metrics.js';

/** Started before the HTTP server, so it stops after the server has answered its last request. */
export async function startCreatesThread(ctx: Ctx, { config, log, shutdown }: Booting): Promise<CreatesThread> {
  const thread = new CreatesThread({
    config,
    installation: ctx.installation,
    log: log.child({ component: 'creates' }),
    local: new AssetIntake(ctx),
    announce: (kinds) => kinds.forEach((k) => ctx.queue.notify(k)),
  });
  shutdown.add(() => thread.stop());
  await thread.start();
  writeCreatesWith(ctx, thread);
  return thread;
}

export interface HttpParts {
  runtimes: ChainRuntime[];
  health: () => Promise<Health>;
  /** Others write beside this process (its workers do not run here): cached reads must hear of it. */
  othersWrite: boolean;
  /** The heap of each of the process's threads (for /metrics). */
  threads: () => ThreadMemory[];
  /** Creates handed to the creates' thread and not answered yet (for /metrics). */
  createsInFlight: () => number;
  /** Where the creates' thread's answered creates waited (for /metrics; null without the thread). */
  createsWaits: () => CreatesWaits | null;
}

/** Listens on HOST:PORT; `url` is where it answers (PORT=0: the port it was given, unless PUBLIC_URL says). */
export async function startHttp(ctx: Ctx, { config, log, core, shutdown }: Booting, parts: HttpParts): Promise<{ http: FastifyInstance; url: string }> {
  // What cached reads need to stay current (on PostgreSQL: a connection listening for changes).
  const changes = config.assetCacheEntries > 0 ? core.store.changeFeed(log.child({ component: 'changes' }), { othersWrite: parts.othersWrite }) : null;
  if (changes) {
    await changes.start();
    shutdown.add(() => changes.stop());
  }
  const http = await buildHttp({
    ctx,
    logger: log,
    changes,
    runtimes: parts.runtimes,
    health: parts.health,
    poolStats: core.store.poolStats,
    threads: parts.threads,
    createsInFlight: parts.createsInFlight,
    createsWaits: parts.createsWaits,
  });
  shutdown.add(async () => admissionOf(ctx).stop());
  await http.listen({ port: config.port, host: config.host }).catch((err) => {
    throw bindError(err as NodeJS.ErrnoException, config.host, config.port);
  });
  shutdown.add(() => http.close());
  let url = ctx.installation.publicUrl;
  const addr = http.server.address();
  if (addr && typeof addr === 'object' && !process.env.PUBLIC_URL && config.port === 0) url = `http://127.0.0.1:${addr.port}`;
  return { http, url };
}
