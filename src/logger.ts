/**
 * Logs to a stream (stderr by default), one line per entry: JSON lines (`format: 'json'`, the
 * default: for files and log collectors) or a human line (`'pretty'`: time, level, message, then
 * key=value fields; what `appreg serve` prints on a terminal). Values of fields whose names
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
const SECRET_VALUE =
  /\b(acs|apk|ass|aut|abt|acd|awt|asn|acf|ald|axt)_[A-Za-z0-9_-]{16,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;

/**
 * An error code or errno (`manifest_unavailable`, `ECONNREFUSED`) under a `code` key is not a secret:
 * lower-case words joined by `_`, or E and capitals. (An OAuth code is neither, and its acd_ prefix is scrubbed
 * anyway.)
 */
const ERROR_CODE = /^(?:[a-z]+(?:_[a-z]+)*|E[A-Z]+)$/;
const isSecretField = (k: string, v: unknown) =>
  SECRET_KEY.test(k) &&
  v !== undefined &&
  v !== null &&
  typeof v !== 'boolean' &&
  typeof v !== 'number' &&
  !(k === 'code' && typeof v === 'string' && v.length <= 40 && ERROR_CODE.test(v));

export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.replace(SECRET_VALUE, '[redacted]');
  if (depth > 5 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = isSecretField(k, v) ? '[redacted]' : redact(v, depth + 1);
  }
  return out;
}

export type LogFormat = 'json' | 'pretty';

/**
 * A field value on a pretty line: bare when it has no space, quote or `=`, else JSON; a multi-line string (a stack) is
 * indented below.
 */
function prettyValue(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v);
}

/**
 * `12:34:56.789 WARN  message key=value …`; a field holding several lines (a stack) follows on its own indented lines.
 */
function prettyLine(time: string, level: Level, msg: string, fields: Record<string, unknown>): string {
  const blocks: string[] = [];
  const pairs: string[] = [];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue; // as in a JSON line: a field without a value is left out, never `k=undefined`
    if (typeof v === 'string' && v.includes('\n')) blocks.push(`    ${k}: ${v.replace(/\n/g, '\n    ')}`);
    else pairs.push(`${k}=${prettyValue(v)}`);
  }
  const head = `${time.slice(11, 23)} ${level.toUpperCase().padEnd(5)} ${msg}${pairs.length ? ` ${pairs.join(' ')}` : ''}`;
  return [head, ...blocks].join('\n') + '\n';
}

export function createLogger(
  opts: {
    level?: Level;
    stream?: { write(s: string): unknown };
    base?: Record<string, unknown>;
    format?: LogFormat;
  } = {},
): Logger {
  const min = order[opts.level ?? 'info'];
  const stream = opts.stream ?? process.stderr;
  const base = opts.base ?? {};
  const format = opts.format ?? 'json';
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>) => {
    if (order[level] < min) return;
    const time = new Date().toISOString();
    const rest = redact({ ...base, ...fields }) as Record<string, unknown>;
    if (format === 'pretty') stream.write(prettyLine(time, level, redact(msg) as string, rest));
    else stream.write(JSON.stringify({ time, level, msg: redact(msg), ...rest }) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({ level: opts.level, stream, format, base: { ...base, ...fields } }),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silentLogger };
