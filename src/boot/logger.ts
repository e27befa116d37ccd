// The service's logger: its level and format from the settings, and the paths whose values are never
// written, whatever is logged.
import pino, { type Logger } from 'pino';
import type { Config } from '../config/config.js';
import { prettyDestination } from '../util/log-format.js';

export function createLogger(config: Pick<Config, 'logLevel'> & Partial<Pick<Config, 'logFormat'>>): Logger {
  const options = {
    level: config.logLevel,
    // Belt and braces: whatever is logged, these paths never show their values.
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        'headers.authorization',
        'headers["x-api-key"]',
        '*.api_secret',
        'api_secret',
        '*.secret',
        'secret',
        '*.token',
      ],
      censor: '[redacted]',
    },
  };
  // LOG_FORMAT (src/config/config.ts): readable lines on a terminal, JSON for log collectors.
  return config.logFormat === 'pretty' ? pino(options, prettyDestination()) : pino(options);
}
