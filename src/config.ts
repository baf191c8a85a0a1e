/**
 * Daemon configuration: defaults < config file < APPREG_* environment < flags.
 * The config file is `<data-dir>/config.json` unless --config / APPREG_CONFIG names another.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { defaultDataDir } from './default-data-dir.js';
import type { LogFormat } from './logger.js';
import { configSchema, describe, flagName, fromText, type ConfigSchema } from './config-schema.js';
import { must } from './must.js';
import { isRecord, messageOf, stringOr } from './unknown-values.js';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /**
   * PostgreSQL instead of the embedded store: `postgres://user:password@host:port/db` (APPREG_DATABASE_URL,
   * `serve --database-url`). Any number of daemons may share one database; each keeps its own data dir
   * (the key file, which must be the same for all of them, credentials and the daemon's lock).
   */
  databaseUrl?: string;
  /** PostgreSQL: connections in each daemon's pool. */
  databasePoolSize: number;
  /** Delivery: how long a daemon holds an event it claimed; a daemon that dies loses it to the others after this. */
  deliveryLeaseMs: number;
  publicUrl?: string;
  /** Where the consent screen lives ({app_url}); defaults to publicUrl / the daemon's URL. */
  appUrl?: string;
  keyFile?: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /**
   * The daemon's log lines: `pretty` (human lines) or `json` (JSON lines). Unset (the default):
   * pretty when stderr is a terminal, else json. `serve --log-format` wins over this.
   */
  logFormat?: LogFormat;
  bodyLimitBytes: number;
  /** A request (headers and body) must arrive within this many ms, else 408; 0 disables. */
  requestTimeoutMs: number;
  /**
   * Open connections at most; at the cap, idle keep-alive connections are closed first, then the
   * oldest still sending their request headers, then new ones refused; 0 disables.
   */
  maxConnections: number;
  /**
   * Open connections per caller address (IPv6: per /64) at most; beyond it that address's idle
   * keep-alive connections are closed first, then its new ones refused; 0 disables (behind a
   * reverse proxy every connection comes from the proxy: raise it to maxConnections or use 0).
   */
  maxConnectionsPerAddress: number;
  allowInsecureRedirects: boolean;
  managementTokenTtlSeconds: number;
  codeTtlSeconds: number;
  /** Requests per minute per key; 0 disables. */
  rateLimitTokenEndpoint: number;
  rateLimitLogin: number;
  /**
   * Consent screen pages per minute per caller address (the screen keeps nothing for visitors, this bounds their CPU).
   */
  rateLimitConsent: number;
  /**
   * The platform API's documented rate limits (docs/protocol.md §9); false switches them off for load tests and
   * benchmarks.
   */
  platformRateLimits: boolean;
  rateLimitManagementWrites: number;
  fsync: boolean;
  /**
   * How far V8 lets the daemon's heap grow past what the last full collection kept before it
   * collects again, in percent (V8's --heap-growing-percent); 0 leaves V8's own choice, which on a
   * busy daemon is up to 4 times the live data (docs/configuration.md). Not a limit: the heap grows
   * with the data.
   */
  heapGrowingPercent: number;
  /**
   * Socket mode: protocol-level ping period; a connection that misses a pong for one period is dropped (so within 2
   * periods).
   */
  socketPingIntervalMs: number;
  /** Socket mode: open connections per app; one more is refused with close code 1008. */
  socketMaxConnectionsPerApp: number;
  /** Socket mode: lifetime of the single-use ticket in the URL handed out by websocket-connection. */
  socketTicketTtlMs: number;
  /**
   * Socket mode: more than this many bad frames (malformed, unknown correlation id) in socketBadFrameWindowMs closes
   * with 1008.
   */
  socketBadFrameLimit: number;
  socketBadFrameWindowMs: number;
  /**
   * Socket mode: events for an app with no open connection are kept (in order, on disk) as long as the
   * retry schedule runs (0, the default), or at most this long; then dropped with a warning.
   */
  socketQueueMaxAgeMs: number;
  /** Socket mode: at most this many kept events per app; beyond, the oldest is dropped with a warning. */
  socketQueueMaxPerApp: number;
  /** Delivery: the acknowledgement budget of interactive calls (docs/protocol.md §5: 3 seconds). */
  deliveryBudgetMs: number;
  /** Delivery: how long one event attempt may take before it counts as a timeout. */
  deliveryEventTimeoutMs: number;
  /** Delivery: seconds between event retries, comma-separated (each ±20 % jitter); one retry per entry. */
  deliveryRetrySchedule: string;
  /** Delivery: bytes of an answer that are read (the rest is cut off). */
  deliveryMaxResponseBytes: number;
  /** Delivery log: total size kept on disk under <data-dir>/deliveries, oldest files removed first. */
  deliveryLogMaxBytes: number;
  /** Delivery log: entries older than this many days are dropped. */
  deliveryLogRetentionDays: number;
  /**
   * Egress: refuse every special-purpose address (private, link-local, CGNAT, documentation, multicast, unique-local…;
   * docs/security.md §5), loopback governed separately.
   */
  egressDenyPrivate: boolean;
  /**
   * Egress: loopback targets (127.0.0.0/8, ::1 and their IPv4-mapped, -compatible, NAT64 and 6to4 forms).
   * Unset (the default): allowed only when `host` is a loopback address (127.x, ::1, localhost: a laptop
   * or CI), refused when the daemon listens anywhere else. true / false: always allowed / refused.
   */
  egressAllowLoopback?: boolean;
  /** Egress: comma-separated addresses or CIDR ranges allowed even when the rules above deny them. */
  egressAllow: string;
  /**
   * Workspace: messages kept per channel (thread replies included); beyond, the oldest are removed as new ones are
   * posted.
   */
  workspaceMessagesPerChannel: number;
  /**
   * Files: the largest file an app may upload (POST /v1/files/upload/token, /upload/files), in bytes; larger is 413.
   */
  filesMaxBytes: number;
  /** Files: the bytes of every kept file together (under <data-dir>/files); an upload beyond is 413. */
  filesTotalMaxBytes: number;
}

export const DEFAULT_PORT = 8740;

export const defaults: Config = {
  host: '127.0.0.1',
  port: DEFAULT_PORT,
  dataDir: 'data',
  databasePoolSize: 10,
  deliveryLeaseMs: 30_000,
  logLevel: 'info',
  bodyLimitBytes: 1024 * 1024,
  requestTimeoutMs: 30_000,
  maxConnections: 1000,
  maxConnectionsPerAddress: 256,
  allowInsecureRedirects: false,
  managementTokenTtlSeconds: 30 * 24 * 3600,
  codeTtlSeconds: 120,
  rateLimitTokenEndpoint: 6000,
  rateLimitLogin: 20,
  rateLimitConsent: 600,
  platformRateLimits: true,
  rateLimitManagementWrites: 6000,
  fsync: true,
  heapGrowingPercent: 20,
  socketPingIntervalMs: 20_000,
  socketMaxConnectionsPerApp: 10,
  socketTicketTtlMs: 30_000,
  socketBadFrameLimit: 50,
  socketBadFrameWindowMs: 10_000,
  socketQueueMaxAgeMs: 0,
  socketQueueMaxPerApp: 10_000,
  deliveryBudgetMs: 3000,
  deliveryEventTimeoutMs: 10_000,
  deliveryRetrySchedule: '1,5,30,120,600,1800,3600',
  deliveryMaxResponseBytes: 64 * 1024,
  deliveryLogMaxBytes: 64 * 1024 * 1024,
  deliveryLogRetentionDays: 7,
  egressDenyPrivate: true,
  egressAllow: '',
  workspaceMessagesPerChannel: 10_000,
  filesMaxBytes: 50 * 1024 * 1024,
  filesTotalMaxBytes: 1024 * 1024 * 1024,
};

/** dataDir ↔ APPREG_DATA_DIR */
export const envName = (key: string) => 'APPREG_' + key.replace(/[A-Z]/g, (c) => '_' + c).toUpperCase();

export class ConfigError extends Error {}

export interface AddressRange {
  address: string;
  /** Prefix length of a CIDR range; undefined for a single address. */
  bits?: number;
  type: 'ipv4' | 'ipv6';
}

/** "10.1.2.3, 192.168.0.0/16, fd00::/8" → ranges; a ConfigError names the entry that is not one. */
export function parseAddressList(spec: string, key = 'egressAllow'): AddressRange[] {
  const out: AddressRange[] = [];
  for (const raw of spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [address = '', bitsText, extra] = raw.split('/');
    const family = net.isIP(address);
    const max = family === 6 ? 128 : 32;
    const bits = bitsText === undefined ? undefined : Number(bitsText);
    if (!family || extra !== undefined || (bits !== undefined && (!/^\d{1,3}$/.test(must(bitsText)) || bits > max))) {
      throw new ConfigError(`${key}: "${raw}" is not an IP address or CIDR range (for example 10.0.0.5 or 10.0.0.0/8)`);
    }
    out.push({ address, bits, type: family === 6 ? 'ipv6' : 'ipv4' });
  }
  return out;
}

/**
 * Whether `raw` is a PostgreSQL URL the daemon can connect to: postgres: or postgresql:, naming a
 * host (in the URL, or as its `host` parameter). The one rule for `databaseUrl` and for
 * `appreg db --database-url`, so `db migrate` takes exactly the URLs `serve` takes.
 */
export function isPostgresUrl(raw: string): boolean {
  try {
    const u = new URL(raw);
    return (
      (u.protocol === 'postgres:' || u.protocol === 'postgresql:') && (u.hostname !== '' || u.searchParams.has('host'))
    );
  } catch {
    return false;
  }
}

/** The rules a schema cannot say: a database URL Node's URL parser and pg accept, each egress entry an address. */
function beyondSchema(
  read: Record<string, unknown>,
  properties: ConfigSchema<Config>['properties'],
): string | undefined {
  if (typeof read.databaseUrl === 'string' && !isPostgresUrl(read.databaseUrl))
    return describe('databaseUrl', properties.databaseUrl ?? {});
  if (typeof read.egressAllow === 'string') {
    try {
      parseAddressList(read.egressAllow);
    } catch (e) {
      return messageOf(e);
    }
  }
  return undefined;
}

export function loadConfig(
  flags: Partial<Record<keyof Config, unknown>> & { config?: string } = {},
  env: NodeJS.ProcessEnv = process.env,
): Config {
  const { properties, check } = configSchema<Config>();
  const keys = Object.keys(properties).filter((k) => k !== '$schema');
  const cfg: Config = { ...defaults };
  // the default is decided here, not in `defaults`: it depends on where appreg is installed (data-dir.ts)
  const dataDir = stringOr(flags.dataDir) ?? (env.APPREG_DATA_DIR || defaultDataDir(env));
  cfg.dataDir = dataDir;
  const file = flags.config ?? env.APPREG_CONFIG ?? path.join(dataDir, 'config.json');
  /** One source's settings, read from text where it is text and checked against the schema. */
  const apply = (source: string, settings: Record<string, unknown>) => {
    const read: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(settings)) read[k] = fromText(properties[k]?.type, v);
    const checked = check(read);
    if ('problem' in checked) throw new ConfigError(`${source}: ${checked.problem}`);
    const wrong = beyondSchema(read, properties);
    if (wrong) throw new ConfigError(`${source}: ${wrong}`);
    Object.assign(cfg, checked.settings);
  };
  if (fs.existsSync(file)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (e) {
      throw new ConfigError(`config file ${file} is not valid JSON: ${messageOf(e)}`);
    }
    if (!isRecord(parsed)) throw new ConfigError(`config file ${file} must hold a JSON object`);
    const { $schema: _editorsOnly, ...settings } = parsed;
    apply(`config file ${file}`, settings);
  } else if (flags.config ?? env.APPREG_CONFIG) {
    throw new ConfigError(`config file ${file} does not exist`);
  }
  for (const k of keys) {
    const v = env[envName(k)];
    if (v !== undefined && v !== '') apply(envName(k), { [k]: v });
  }
  const flagged = new Map<string, unknown>(Object.entries(flags));
  for (const k of keys) {
    const v = flagged.get(k);
    if (v !== undefined) apply(flagName(k), { [k]: v });
  }
  cfg.dataDir = path.resolve(cfg.dataDir);
  return cfg;
}
