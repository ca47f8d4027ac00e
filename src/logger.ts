import type { Logger as PinoLogger } from 'pino';

/** The structured logger (pino) shared by the API, the worker and the CLI. */
export type Logger = PinoLogger;
