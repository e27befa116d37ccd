// Each request's logger, made when the request first logs. Fastify gives every request a child of the
// server's logger bound to its id; making one (pino serialises the bindings, and the object is garbage a
// moment later) was a few per cent of a cached GET's CPU, for requests that almost never log.
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilentOrString, Logger } from 'pino';

export class LazyChildLogger {
  private made: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly opts: ChildLoggerOptions,
  ) {}

  private real(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.opts);
    return this.made;
  }

  get level(): LevelWithSilentOrString {
    return this.made?.level ?? this.opts.level ?? this.parent.level;
  }
  set level(level: LevelWithSilentOrString) {
    this.real().level = level;
  }
  /** Whether a line of `level` would be written: answered without making the child (it has its parent's level). */
  isLevelEnabled(level: Level): boolean {
    const logger = (this.made || this.opts.level ? this.real() : this.parent) as FastifyBaseLogger & Pick<Logger, 'isLevelEnabled'>;
    return logger.isLevelEnabled(level);
  }
  child(bindings: Bindings, opts?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, opts);
  }
  // Methods on the prototype, not arrow functions in fields: those were seven closures made per request.
  fatal(...args: Parameters<FastifyBaseLogger['fatal']>): void {
    this.real().fatal(...args);
  }
  error(...args: Parameters<FastifyBaseLogger['error']>): void {
    this.real().error(...args);
  }
  warn(...args: Parameters<FastifyBaseLogger['warn']>): void {
    this.real().warn(...args);
  }
  info(...args: Parameters<FastifyBaseLogger['info']>): void {
    this.real().info(...args);
  }
  debug(...args: Parameters<FastifyBaseLogger['debug']>): void {
    this.real().debug(...args);
  }
  trace(...args: Parameters<FastifyBaseLogger['trace']>): void {
    this.real().trace(...args);
  }
  silent(...args: Parameters<FastifyBaseLogger['silent']>): void {
    this.real().silent(...args);
  }
}

/** Fastify's `childLoggerFactory`: a request's logger, made on first use. */
export function lazyChildLogger(parent: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings, opts) as unknown as FastifyBaseLogger;
}
