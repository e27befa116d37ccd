// Every failure answers in the error envelope of the API, including the ones Fastify and Node's HTTP
// parser produce themselves: an undecodable URL, an over-long path segment, oversized headers, a
// request while the server is closing, an unknown route, a body that is not JSON.
import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ApiError, errorBody } from '../../util/errors.js';
import { fallbackCode } from '../../domain/error-codes.js';
import { IdempotencyConflict } from '../../services/requests/idempotency.js';
import type { Idempotency } from './idempotency.js';

const codeFor = fallbackCode;

export const notFound = () => ApiError.client(404, 'not_found', 'Not Found');

/** Drops the query string from URLs that reach logs: one SDK puts api_secret in every query. */
export function redactQuery(url: string): string {
  const i = url.indexOf('?');
  return i < 0 ? url : `${url.slice(0, i)}?<redacted>`;
}

export function errorHandler(idempotency: Idempotency) {
  return async (err: FastifyError | ApiError | Error, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof IdempotencyConflict && req.idempotency) {
      try {
        return await idempotency.afterConflict(req, reply);
      } catch (e) {
        err = e as Error;
      }
    }
    if (err instanceof ApiError) return reply.code(err.status).send(err.toBody());
    if (hasZodFastifySchemaValidationErrors(err)) {
      const fields = err.validation.map((v) => ({
        field: v.instancePath.replace(/^\//, '').replace(/\//g, '.') || (err.validationContext ?? 'body'),
        code: v.keyword === 'invalid_type' && v.message === 'This field is required.' ? 'required' : 'invalid',
        message: v.message ?? 'Invalid value.',
      }));
      return reply.code(400).send(ApiError.validation(fields).toBody());
    }
    const fe = err as FastifyError;
    const status = fe.statusCode && fe.statusCode >= 400 && fe.statusCode <= 599 ? fe.statusCode : 500;
    if (status >= 500) req.log.error({ err, url: redactQuery(req.url) }, 'request failed');
    const message = status === 413 ? 'Request body is too large.' : status >= 500 ? 'Internal server error.' : fe.message;
    return reply.code(status).send(errorBody(status, codeFor(status), message));
  };
}

/**
 * Fastify's own routing failures (FST_ERR_BAD_URL: not percent-decodable as UTF-8; FST_ERR_MAX_PARAM_LENGTH:
 * a path segment over the router's limit). `guard` first applies what the path's area requires (API
 * credentials and rate limits under /v1, the operator token under /admin/v1), so those answer 401/429
 * as any request there would.
 */
export function frameworkErrors(guard: (req: FastifyRequest, reply: FastifyReply) => Promise<void>) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    void (async () => {
      try {
        await guard(req, reply);
        if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') throw ApiError.client(414, codeFor(414), 'A segment of the URL path is too long.');
        throw ApiError.client(400, 'bad_url', 'The URL is not valid: percent-encoded bytes must form UTF-8 text.');
      } catch (e) {
        const body = e instanceof ApiError ? e : ApiError.client(400, 'bad_request', 'Bad request.');
        reply.code(body.status).send(body.toBody());
      }
    })();
  };
}

/**
 * Errors Node's HTTP parser reports before there is a request to answer (headers over the size limit,
 * malformed HTTP, a client too slow to send its request): the envelope written straight to the socket.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request headers are too large.']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'The request was not received in time.']
        : [400, 'Malformed HTTP request.'];
  const body = JSON.stringify(errorBody(status, codeFor(status), message));
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

/** 503 in the envelope for requests that arrive while the server is closing (instead of Fastify's own). */
export function closingGuard() {
  let closing = false;
  return {
    preClose: async () => {
      closing = true;
    },
    onRequest: async (_req: FastifyRequest, reply: FastifyReply) => {
      if (!closing) return;
      reply.header('connection', 'close').header('retry-after', '1');
      return reply.code(503).send(errorBody(503, codeFor(503), 'The service is shutting down: retry shortly.'));
    },
  };
}
