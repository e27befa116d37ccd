// What the console's pages share: their dependencies, the App of a path, paging parameters, and who
// acts (for the audit log).
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Ctx } from '../../services/context.js';
import type { Health } from '../root.js';
import type { ChainHandle } from '../../services/chain-ops.js';
import type { Actor } from '../../services/audit.js';
import { getApp } from '../../services/apps/registry.js';
import { ApiError } from '../../util/errors.js';
import { isUid } from '../../util/ids.js';
import { str } from '../kit/schemas.js';
import type { App } from '../kit/route-kit.js';

export interface ConsoleApiDeps {
  ctx: Ctx;
  health: () => Promise<Health>;
  /** The chains served: the chain pages use the operator's chain routes (under /ops). */
  runtimes?: readonly ChainHandle[];
}

/** The routes of one console page, on the signed-in scope. */
export type ConsolePage = (app: App, deps: ConsoleApiDeps) => Promise<void>;

export const appParam = z.object({ uid: str() });
export const page = { cursor: str().max(500).optional(), limit: z.coerce.number().int().min(1).max(200).default(50) };

/** The console's actor in the audit log: a console session, told apart by client address. */
export const consoleActor = (req: FastifyRequest): Actor => ({ kind: 'console', detail: req.ip });

/** The uid of an App that exists, or a 404. */
export function appFinder(ctx: Ctx): (uid: string) => Promise<string> {
  return async (uid) => {
    if (!isUid(uid) || !(await getApp(ctx, uid))) throw ApiError.notFound('App');
    return uid;
  };
}
