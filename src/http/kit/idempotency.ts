// The Idempotency-Key header on POST and PUT under /v1, per App:
// - the same key with the same request (method, route, path parameters, exact body) within 24 h: the
//   first answer again, status and body, with `idempotent-replayed: true`;
// - the same key with another request: 422;
// - while the first is still running in this process: 409. (In another process, on PostgreSQL, the
//   second request waits for the first's transaction at its insert, then gets the first's answer.)
// The answer is stored by the service, in the transaction of the operation (src/services/requests/idempotency.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Ctx } from '../../services/context.js';
import { findAnswer, fingerprint, sweepAnswers, type IdempotentWrite, type StoredAnswer } from '../../services/requests/idempotency.js';
import { ApiError } from '../../util/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body's text as received (set by the JSON parser). */
    rawBody?: string;
    idempotencyKey?: string;
    /** Set when the request carries a key that has no answer yet: the service stores its answer. */
    idempotency?: IdempotentWrite;
  }
}

const HEADER = 'idempotency-key';
const FIELD = 'Idempotency-Key';
/** Visible ASCII, 1-255 characters: what the IETF draft and every SDK send (UUIDs, random tokens). */
const KEY_SYNTAX = /^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/;

export class Idempotency {
  /** `app uid \n key` of requests running in this process. */
  private readonly running = new Set<string>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly ctx: Ctx) {}

  /** Before routing, after authentication, for a POST or PUT: the header's syntax. */
  readonly checkHeader = (req: FastifyRequest): void => {
    const v = req.headers[HEADER];
    if (v === undefined) return;
    if (typeof v !== 'string' || !KEY_SYNTAX.test(v)) {
      throw ApiError.validation([
        { field: FIELD, code: 'invalid', message: 'Idempotency-Key must be 1-255 visible ASCII characters (e.g. a UUID), sent once.' },
      ]);
    }
    req.idempotencyKey = v;
  };

  /**
   * preValidation: replay, refuse, or let the request run and store its answer. Callback-style: most
   * writes carry no key, and an async hook would cost each of them a promise and a turn of the microtasks.
   */
  readonly begin = (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    if (req.idempotencyKey === undefined) done();
    else this.beginWithKey(req, reply, req.idempotencyKey).then(() => done(), done);
  };

  /** After a replay (the reply is sent) Fastify's hook runner goes no further. */
  private async beginWithKey(req: FastifyRequest, reply: FastifyReply, key: string): Promise<void> {
    const slot = `${req.appUid}\n${key}`;
    if (this.running.has(slot)) throw ApiError.of('idempotency_key_in_use');
    this.running.add(slot);
    reply.raw.once('close', () => this.running.delete(slot));
    const now = Date.now();
    const fp = fingerprint(req.method, req.routeOptions.url ?? req.url, req.params, req.rawBody ?? '');
    const stored = await findAnswer(this.ctx.db, req.appUid, key, now);
    if (stored) {
      this.answer(reply, stored, fp);
      return;
    }
    req.idempotency = { appUid: req.appUid, key, fingerprint: fp, status: req.method === 'POST' ? 201 : 200, now };
  }

  /**
   * After IdempotencyConflict: another request with this key committed while this one ran (it was
   * rolled back). Answer as that one did, or 422 if it was a different request.
   */
  async afterConflict(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const w = req.idempotency!;
    const stored = await findAnswer(this.ctx.db, w.appUid, w.key, Date.now());
    if (!stored) throw new Error('idempotency conflict without a stored answer');
    return this.answer(reply, stored, w.fingerprint);
  }

  private answer(reply: FastifyReply, stored: StoredAnswer, fp: string): FastifyReply {
    if (stored.fingerprint !== fp) {
      throw ApiError.of('idempotency_key_reused');
    }
    return reply.code(stored.status).header('idempotent-replayed', 'true').type('application/json; charset=utf-8').send(stored.body);
  }

  /** Deletes expired answers now and then (every process does; it is one indexed delete). */
  startSweeper(everyMs = 10 * 60_000): void {
    this.sweeper ??= setInterval(
      () => void sweepAnswers(this.ctx.db, Date.now()).catch((err) => this.ctx.log.warn({ err }, 'expired idempotency keys could not be deleted')),
      everyMs,
    );
    this.sweeper.unref();
  }

  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }
}
