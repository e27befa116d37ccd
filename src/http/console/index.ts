// The developer console: the browser app under /console and its JSON API under /console/api.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { consoleApi, type ConsoleApiDeps } from './api.js';
import { consoleStatic } from './static.js';

export async function consoleRoutes(app: FastifyInstance<any, any, any, any, any>, deps: ConsoleApiDeps): Promise<void> {
  await app.register(async (api) => consoleApi(api.withTypeProvider<ZodTypeProvider>(), deps), { prefix: '/console/api' });
  await consoleStatic(app);
}
