/**
 * One-line JSON logs to a stream (stderr by default). Values of fields whose names
 * look secret are redacted, and strings are scrubbed of anything shaped like one of
 * our secrets (prefixed tokens, JWTs), so a careless log call cannot leak them.
 */
export type Level = 'debug' | 'info' | 'warn' | 'error';
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

const SECRET_KEY = /(secret|token|password|authorization|signature|code|appkey|app-key|cookie|ticket|key$)/i;
const SECRET_VALUE = /\b(acs|apk|ass|aut|abt|acd|awt|asn|acf)_[A-Za-z0-9_-]{16,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;

export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.replace(SECRET_VALUE, '[redacted]');
  if (depth > 5 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = SECRET_KEY.test(k) && v !== undefined && v !== null && typeof v !== 'boolean' && typeof v !== 'number' ? '[redacted]' : redact(v, depth + 1);
  }
  return out;
}

export function createLogger(opts: { level?: Level; stream?: { write(s: string): unknown }; base?: Record<string, unknown> } = {}): Logger {
  const min = order[opts.level ?? 'info'];
  const stream = opts.stream ?? process.stderr;
  const base = opts.base ?? {};
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>) => {
    if (order[level] < min) return;
    const line = { time: new Date().toISOString(), level, msg: redact(msg), ...(redact({ ...base, ...fields }) as object) };
    stream.write(JSON.stringify(line) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({ level: opts.level, stream, base: { ...base, ...fields } }),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silentLogger };
