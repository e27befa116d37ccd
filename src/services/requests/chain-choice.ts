// Which chain a new collection or reward goes to: the one asked for, which must be served here, or the
// default chain (the embedded one, else the first configured).
import type { Ctx } from '../context.js';
import { defaultChain } from '../../config/config.js';
import { ApiError } from '../../util/errors.js';

export function chainForNew(ctx: Pick<Ctx, 'installation'>, chainId: number | null | undefined): number {
  if (chainId === undefined || chainId === null) return defaultChain(ctx).id;
  if (ctx.installation.chains.some((c) => c.id === chainId)) return chainId;
  const served = ctx.installation.chains.map((c) => `${c.id} (${c.name})`).join(', ');
  throw ApiError.validation([{ field: 'chain_id', code: 'invalid', message: `Chain ${chainId} is not served by this deployment; served: ${served}.` }]);
}
