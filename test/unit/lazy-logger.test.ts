// A request's logger made on first use (src/http/kit/lazy-logger.ts), on a real pino logger: a request
// that does not log makes no child; one that logs writes its line with the request's bindings; the
// level is the parent's until the child's own is set.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { lazyChildLogger } from '../../src/http/kit/lazy-logger.js';

function parentLogger(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level, base: { component: 'http' } }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  let children = 0;
  const child = logger.child.bind(logger);
  logger.child = ((...args: Parameters<typeof logger.child>) => {
    children++;
    return child(...args);
  }) as typeof logger.child;
  return { logger: logger as unknown as FastifyBaseLogger, lines, children: () => children };
}

describe("a request's lazy logger", () => {
  it('makes no child for a request that does not log, and answers its level from the parent', () => {
    const p = parentLogger('warn');
    const log = lazyChildLogger(p.logger, { reqId: 'req-1' }, {}) as FastifyBaseLogger & { isLevelEnabled(l: string): boolean };
    assert.equal(log.isLevelEnabled('info'), false);
    assert.equal(log.isLevelEnabled('error'), true);
    assert.equal(log.level, 'warn');
    assert.equal(p.children(), 0);
  });

  it("writes a line with the request's bindings, making the child once", () => {
    const p = parentLogger();
    const log = lazyChildLogger(p.logger, { reqId: 'req-7' }, {});
    log.info({ status: 200 }, 'request');
    log.error('failed');
    log.debug('not written');
    assert.equal(p.children(), 1);
    assert.deepEqual(
      p.lines.map((l) => [l.component, l.reqId, l.msg, l.status]),
      [
        ['http', 'req-7', 'request', 200],
        ['http', 'req-7', 'failed', undefined],
      ],
    );
  });

  it('takes a level of its own once set', () => {
    const p = parentLogger();
    const log = lazyChildLogger(p.logger, { reqId: 'req-9' }, {});
    log.level = 'debug';
    log.debug('written');
    assert.equal(p.logger.level, 'info');
    assert.deepEqual(
      p.lines.map((l) => l.msg),
      ['written'],
    );
  });
});
