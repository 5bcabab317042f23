// Structured JSON logs (pino), one line per event.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string = process.env.RICOCHET_LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: { service: 'ricochet-relay' }, timestamp: pino.stdTimeFunctions.isoTime });
}
