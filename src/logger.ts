/**
 * Logs to a stream (stderr by default), one line per entry: JSON lines (`format: 'json'`, the
 * default: for files and log collectors) or a human line (`'pretty'`: time, level, message, then
 * key=value fields; what `appreg serve` prints on a terminal). Values of fields whose names
 * look secret are redacted, and strings are scrubbed of anything shaped like one of
 * our secrets (prefixed tokens, JWTs), so a careless log call cannot leak them.
 *
 * The lines are made by pino and, on stderr, written asynchronously (pino's destination: lines
 * gather in a buffer while a write is under way, so a delivery at info level no longer waits for
 * a blocking write of its own). Nothing is lost at a stop: `flush()` waits for what is buffered,
 * and on `process.exit` (a fatal error included) pino writes the rest synchronously. The secret
 * rules stay ours (`redact` below): pino's own `redact` takes fixed paths, and the rule here is a
 * pattern over every key at any depth plus the values' shapes, so it runs as pino's log
 * formatter instead.
 */
import pino, { type Logger as Pino } from 'pino';
import { recordOr } from './unknown-values.js';

export type Level = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  /** Whether lines at `level` are written: a caller whose line costs something to build asks first. */
  enabled(level: Level): boolean;
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

/** `text` with anything shaped like one of our secrets (a prefixed token, a JWT) replaced. */
const scrub = (text: string): string => text.replace(SECRET_VALUE, '[redacted]');

/** An object's fields (a log call's, or an object among them at `depth`) with secret ones redacted. */
function redactFields(fields: object, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    out[k] = isSecretField(k, v) ? '[redacted]' : redact(v, depth + 1);
  }
  return out;
}

export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrub(value);
  if (depth > 5 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  return redactFields(value, depth);
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
function prettyLine(time: string, level: string, msg: string, fields: Record<string, unknown>): string {
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

/** A logger the daemon's process owns: it can wait until every line it was given is written. */
export interface RootLogger extends Logger {
  /** Resolves once every line logged so far has reached the stream (at a stop, before the process ends). */
  flush(): Promise<void>;
}

type Sink = ReturnType<typeof pino.destination>;
let stderrSink: Sink | undefined;
/**
 * The one asynchronous writer on fd 2 that every logger of the process shares (two would interleave their buffers).
 * pino registers it to be written out synchronously on the process's exit.
 */
function stderrDestination(): Sink {
  if (!stderrSink || destroyed(stderrSink)) stderrSink = pino.destination({ fd: 2, sync: false });
  return stderrSink;
}

/** What sonic-boom (pino's destination) keeps outside its types: ended; a write under way (later lines wait). */
const destroyed = (sink: Sink) => 'destroyed' in sink && sink.destroyed === true;
const writing = (sink: Sink) => '_writing' in sink && sink._writing === true;

/** A JSON line from pino, written to `out` as a pretty line. */
function prettyStream(out: { write(s: string): unknown }) {
  return {
    write(line: string) {
      // pino's line: a JSON object
      const { time, level, msg, ...fields }: Record<string, unknown> = recordOr(JSON.parse(line)) ?? {};
      out.write(prettyLine(String(time), String(level), String(msg ?? ''), fields));
    },
  };
}

const isoTime = () => `,"time":"${new Date().toISOString()}"`;

function wrap(p: Pino): Logger {
  // a level that is off costs one check: no scrub of the message, no fields object (a request logs at info; the
  // daemon often runs at warn)
  const at = (level: Level) => (m: string, f?: Record<string, unknown>) => {
    if (p.isLevelEnabled(level)) p[level](f ?? {}, scrub(m));
  };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (fields) => wrap(p.child(redactFields(fields))),
    enabled: (level) => p.isLevelEnabled(level),
  };
}

export function createLogger(
  opts: {
    level?: Level;
    stream?: { write(s: string): unknown };
    base?: Record<string, unknown>;
    format?: LogFormat;
  } = {},
): RootLogger {
  // process.stderr (the default, and what `serve` passes): pino's asynchronous writer on fd 2; any other stream (a
  // test's, a file the caller opened) is written to as pino writes, line by line
  let sink: Sink | undefined;
  let target: { write(s: string): unknown };
  if (opts.stream && opts.stream !== process.stderr) target = opts.stream;
  else target = sink = stderrDestination();
  const p = pino(
    {
      level: opts.level ?? 'info',
      base: opts.base ? redactFields(opts.base) : null,
      messageKey: 'msg',
      timestamp: isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (fields) => redactFields(fields),
      },
    },
    opts.format === 'pretty' ? prettyStream(target) : target,
  );
  return {
    ...wrap(p),
    flush: () =>
      new Promise<void>((resolve) => {
        if (!sink || destroyed(sink) || !writing(sink)) return resolve();
        sink.once('drain', () => resolve());
        sink.once('close', () => resolve());
      }),
  };
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silentLogger,
  enabled: () => false,
};
