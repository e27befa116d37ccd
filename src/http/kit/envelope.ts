// Every failure answers in the error envelope of the API, including the ones Fastify and Node's HTTP
// parser produce themselves: an undecodable URL, an over-long path segment, oversized headers, a
// request while the server is closing, an unknown route, a body that is not JSON.
import type { Socket } from 'node:net';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import { isUtf8 } from 'node:buffer';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ApiError, DATABASE_UNAVAILABLE, errorBody } from '../../util/errors.js';
import { fallbackCode } from '../../domain/error-codes.js';
import { IdempotencyConflict } from '../../services/requests/idempotency.js';
import { DATABASE_RETRY_AFTER_S, isDatabaseUnavailable } from '../../store/unavailable.js';
import type { Idempotency } from './idempotency.js';

export const notFound = () => ApiError.of('not_found');

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
    if (isDatabaseUnavailable(err)) {
      req.log.warn({ err: err.message, url: redactQuery(req.url) }, 'database unavailable: answered 503');
      err = ApiError.databaseUnavailable();
    }
    if (err instanceof ApiError) {
      if (err.details[0]?.code === DATABASE_UNAVAILABLE) reply.header('retry-after', String(DATABASE_RETRY_AFTER_S));
      return reply.code(err.status).send(err.toBody());
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const fields = err.validation.map((v) => ({
        field: v.instancePath.replace(/^\//, '').replace(/\//g, '.') || (err.validationContext ?? 'body'),
        code: v.keyword === 'invalid_type' && v.message === 'This field is required.' ? ('required' as const) : ('invalid' as const),
        message: v.message ?? 'Invalid value.',
      }));
      return reply.code(400).send(ApiError.validation(fields).toBody());
    }
    const fe = err as FastifyError;
    const status = fe.statusCode && fe.statusCode >= 400 && fe.statusCode <= 599 ? fe.statusCode : 500;
    if (status === 413 && (await drained(req.raw))) reply.removeHeader('connection'); // read to the end: the connection can stay
    if (status >= 500) req.log.error({ err, url: redactQuery(req.url) }, 'request failed');
    const message = status === 413 ? 'Request body is too large.' : status >= 500 ? 'Internal server error.' : fe.message;
    return reply.code(status).send(errorBody(fallbackCode(status), message));
  };
}

/** The most of an over-long body read (and thrown away) before its 413 is sent, and for how long. */
const DRAIN_BYTES = 64 * 1024 * 1024;
const DRAIN_MS = 10_000;

/**
 * Reads the rest of an over-long body, discarding it, so the 413 reaches the client. A server that
 * answers and closes while the client is still sending resets the connection (the unread bytes make
 * the kernel send RST), and most clients then see a broken pipe instead of the answer: those that
 * send the whole body before reading (most SDKs) never read the 413. True when the body ended.
 */
function drained(raw: IncomingMessage): Promise<boolean> {
  if (raw.readableEnded || raw.destroyed) return Promise.resolve(raw.readableEnded);
  return new Promise((resolve) => {
    let bytes = 0;
    const done = (ended: boolean) => {
      clearTimeout(timer);
      raw.off('data', onData).off('end', onEnd).off('error', onError).off('close', onError);
      resolve(ended);
    };
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > DRAIN_BYTES) done(false);
    };
    const onEnd = () => done(true);
    const onError = () => done(false);
    const timer = setTimeout(() => done(false), DRAIN_MS);
    raw.on('data', onData).once('end', onEnd).once('error', onError).once('close', onError);
    raw.resume();
  });
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
        if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') throw ApiError.of('uri_too_long');
        throw badUrl();
      } catch (e) {
        const body = e instanceof ApiError ? e : ApiError.of('bad_request');
        reply.code(body.status).send(body.toBody());
      }
    })();
  };
}

/**
 * True when the request target, raw bytes and percent-encoded bytes alike, is UTF-8 text. The query
 * string parser replaces what is not with U+FFFD without a word, so a request with an invalid
 * parameter would be answered as if it had sent another value.
 */
export function isUtf8Url(url: string): boolean {
  let plain = true;
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 0x25 || c > 0x7e) {
      plain = false;
      break;
    }
  }
  if (plain) return true;
  // Node hands the request line over byte for byte (latin1): one char per byte.
  const raw = Buffer.from(url, 'latin1');
  const bytes = Buffer.allocUnsafe(raw.length);
  let n = 0;
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i];
    if (b === 0x25 && i + 2 < raw.length && isHex(raw[i + 1]) && isHex(raw[i + 2])) {
      bytes[n++] = parseInt(String.fromCharCode(raw[i + 1], raw[i + 2]), 16);
      i += 2;
    } else bytes[n++] = b;
  }
  return isUtf8(bytes.subarray(0, n));
}

const isHex = (b: number | undefined) => b !== undefined && ((b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66));

/** The answer to a request target that is not UTF-8 text (the same as Fastify's own for a path). */
export const badUrl = () => ApiError.of('bad_url');

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
  // Bytes outside ASCII in the request line (the parser takes none, UTF-8 or not): as a URL whose
  // percent-encoded bytes are not UTF-8 is answered.
  const code = err.code === 'HPE_INVALID_URL' ? 'bad_url' : fallbackCode(status);
  const body = JSON.stringify(errorBody(code, err.code === 'HPE_INVALID_URL' ? badUrl().message : message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/** How long a connection may stay idle once the stop has begun (Node adds a second to it; 0 would be forever). */
const CLOSING_KEEP_ALIVE_MS = 1;

/** 503 in the envelope for requests that arrive while the server is closing (instead of Fastify's own). */
export function closingGuard() {
  let closing = false;
  return {
    /**
     * The stop begins. Node's `server.close()` ends the connections idle at that moment and waits for
     * the others: one whose answer was in flight then is kept open after it, idle, for the rest of the
     * keep-alive time (72 s), and the stop with it, unless its client closes it or sends a request
     * (refused below, with `Connection: close`). From now on an idle connection is closed at once:
     * the stop waits for answers, not for clients.
     */
    preClose: async (server: { keepAliveTimeout: number }) => {
      closing = true;
      server.keepAliveTimeout = CLOSING_KEEP_ALIVE_MS;
    },
    closing: () => closing,
    /** The answer to a request that arrives while the server is closing. */
    refuse: (reply: FastifyReply) => {
      reply.header('connection', 'close').header('retry-after', '1');
      return reply.code(503).send(errorBody('unavailable', 'The service is shutting down: retry shortly.'));
    },
  };
}
