// The console's chain pages: the operator's chain routes of /admin/v1, under /ops.
import type { App } from '../kit/route-kit.js';
import { adminChainRoutes } from '../admin/chains.js';
import { consoleActor, type ConsolePage } from './kit.js';

export const chainPages: ConsolePage = async (app, deps) => {
  const { ctx } = deps;
  // The chain pages: the operator's chain routes of /admin/v1 (src/http/admin/chains.ts), under /ops
  // (GET /chains here is the list of chains a collection can be deployed on).
  await app.register(async (ops: App) => adminChainRoutes(ops, ctx, deps.runtimes ?? [], { actorOf: consoleActor }), { prefix: '/ops' });
};
