/**
 * delayq is silent unless given a logger. Any pino-compatible logger works (pino itself, or a
 * child of the application's logger): only the four methods below are called, object first.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export type LogLevel = keyof Logger;

/** Logs without ever throwing into the caller: a broken logger must not break a job's release. */
export function logSafely(logger: Logger | undefined, level: LogLevel, obj: object, msg: string): void {
  if (!logger) return;
  try {
    logger[level](obj, msg);
  } catch {
    // Nothing sensible to do; the event itself still happened.
  }
}
