// Who acts, for the audit log, from the request: the console (a session, or the operator token sent to
// /console/api) or the management API's operator token, each told apart by client address.
import type { FastifyRequest } from 'fastify';
import type { Actor } from '../../services/audit.js';

export const requestActor = (req: FastifyRequest): Actor => ({
  kind: req.url.startsWith('/console/') ? 'console' : 'operator_token',
  detail: req.ip,
});
