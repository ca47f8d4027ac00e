import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

type Method = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * `request.log` that makes its pino child (the one carrying `reqId`) on the first call that
 * writes, instead of on every request. Fastify asks for a child per request; building it
 * (serialising the bindings, applying the redaction) cost a visible share of a simple route's
 * throughput, although at the usual `warn` level almost no request logs anything. Every call
 * that does write goes through a real child, so lines carry the request id and redaction as
 * before.
 */
class LazyRequestLogger {
  #child: Logger | undefined;
  readonly #threshold: number;

  constructor(
    private readonly parent: Logger,
    private readonly childBindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {
    this.#threshold = options.level ? parent.levels.values[options.level]! : parent.levelVal;
  }

  get #logger(): Logger {
    return (this.#child ??= this.parent.child(this.childBindings, this.options));
  }

  get level(): string {
    return this.#child?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.#logger.level = level;
  }

  isLevelEnabled(level: Level): boolean {
    return this.#child ? this.#child.isLevelEnabled(level) : (this.parent.levels.values[level] ?? Infinity) >= this.#threshold;
  }

  #write(method: Method, args: unknown[]): void {
    if (!this.isLevelEnabled(method)) return;
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- tsc needs it: pino's overloaded LogFn takes no spread of unknown[] (the rule misreads the generic overloads).
    (this.#logger[method] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#write('error', args);
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }
  info(...args: unknown[]): void {
    this.#write('info', args);
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#logger.child(bindings, options);
  }

  bindings(): Bindings {
    return this.#logger.bindings();
  }
}

/** Fastify's `childLoggerFactory`: see LazyRequestLogger. */
export function lazyRequestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyRequestLogger(logger as unknown as Logger, bindings, options);
}
