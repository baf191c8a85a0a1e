/** appreg serve: the only command that loads the server, and only when it runs. */
import path from 'node:path';
import { resolveDataDir } from '../../default-data-dir.js';
import type { Command } from 'commander';
import { loadConfig, ConfigError, DEFAULT_PORT } from '../../config.js';
import { CliError, EXIT } from '../../client/exit.js';
import { action } from '../options.js';
import type { Run } from '../run.js';
import { must } from '../../must.js';
import { messageOf } from '../../unknown-values.js';

/**
 * Resolves with the pid of a daemon that asks this one to hand over (a SIGUSR2 with its takeover.json); never
 * without a queue.
 */
async function handoverAsked(q: { next(): Promise<void> } | undefined, who: () => number | undefined): Promise<number> {
  if (!q) return new Promise<number>(() => {});
  for (;;) {
    await q.next();
    const pid = who();
    if (pid !== undefined) return pid;
  }
}

/**
 * StartupError reasons → exit codes: 8 another daemon holds the data dir, 2 the port is taken (choose another --port);
 * key, data → 1.
 */
const EXIT_OF_STARTUP: Record<string, number> = { locked: EXIT.dataDirLocked, port_in_use: EXIT.usage };

/** A path as one shell word: bare when it is plain, else single-quoted. */
const shellWord = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** What serve's own options hold, as commander parses them (each `<value>` a string, each flag true when given). */
interface ServeOptions {
  host?: string;
  port?: string;
  dataDir?: string;
  databaseUrl?: string;
  keyFile?: string;
  publicUrl?: string;
  config?: string;
  logLevel?: string;
  logFormat?: string;
  allowInsecureRedirects?: true;
  takeover?: true;
  allowFresh?: true;
}

export function registerServe(program: Command, run: Run): void {
  program
    .command('serve')
    .description(
      'run the daemon (HTTP API, consent screen, deliveries, websockets) on the data directory, or on PostgreSQL shared by several daemons',
    )
    .option('--host <host>', 'address to listen on [APPREG_HOST] (default 127.0.0.1)')
    .option('--port <port>', `port to listen on, 0 picks a free one [APPREG_PORT] (default ${DEFAULT_PORT})`)
    .option(
      '--data-dir <dir>',
      'data directory [APPREG_DATA_DIR] (default: data/ of a clone, else ~/.local/share/appreg)',
    )
    .option(
      '--database-url <url>',
      'PostgreSQL instead of the embedded store; any number of daemons may share it [APPREG_DATABASE_URL]',
    )
    .option(
      '--key-file <file>',
      'the key that encrypts secrets at rest [APPREG_KEY_FILE] (default <data-dir>/secret.key; every daemon of a database needs the same one)',
    )
    .option('--public-url <url>', 'URL the daemon is reached at, used in URLs it hands out [APPREG_PUBLIC_URL]')
    .option('--config <file>', 'JSON config file [APPREG_CONFIG] (default <data-dir>/config.json)')
    .option('--log-level <level>', 'debug, info, warn or error [APPREG_LOG_LEVEL]')
    .option(
      '--log-format <format>',
      'pretty (human lines) or json (JSON lines) [APPREG_LOG_FORMAT] (default: pretty when stderr is a terminal, else json)',
    )
    .option('--allow-insecure-redirects', 'accept http: redirect URLs on hosts other than localhost (development only)')
    .option(
      '--takeover',
      'restart without a gap: load, ask the daemon running on this data directory to let go, start, and only then let it close its app websockets and exit',
    )
    .option(
      '--allow-fresh',
      'start a new, empty workspace in a data directory that holds state (a key, credentials, journals) but lost appreg.json',
    )
    .addHelpText(
      'after',
      `
Examples:
  $ appreg serve                          # 127.0.0.1:${DEFAULT_PORT}, data in ./data
  $ appreg serve --port 0 --data-dir /tmp/appreg-ci
  $ APPREG_PORT=9000 appreg serve --public-url https://appreg.example.com
  $ appreg serve --log-format json 2>>appreg.log
  $ APPREG_DATABASE_URL=postgres://appreg:secret@db:5432/appreg appreg serve --public-url https://appreg.example.com
  $ appreg serve --takeover &             # replaces the daemon running on ./data; socket-mode apps stay up

Exit codes: 0 stopped by SIGINT/SIGTERM; 2 bad configuration, or the port is in use; 8 another daemon
holds the data directory; 1 any other start failure (damaged data, wrong key file).`,
    )
    .action(
      action(run, async ({ o, out, cmd }) => {
        // Listen for SIGINT/SIGTERM before anything starts: a signal that arrives while the daemon starts (its port
        // already answering) stops it once it has started, through its shutdown, instead of being missed or ending
        // the process half-started.
        const stopped = run.io.stopSignal();
        // `serve --data-dir` wins over the global `--data-dir` (the merged options would prefer the global one).
        const own = cmd.opts<ServeOptions>();
        const dataDir = own.dataDir ?? o.dataDir;
        let config;
        try {
          config = loadConfig(
            {
              host: own.host,
              port: own.port,
              dataDir: dataDir === undefined ? undefined : path.resolve(run.io.cwd, dataDir),
              databaseUrl: own.databaseUrl,
              keyFile: own.keyFile === undefined ? undefined : path.resolve(run.io.cwd, String(own.keyFile)),
              publicUrl: own.publicUrl,
              logLevel: own.logLevel,
              logFormat: own.logFormat,
              allowInsecureRedirects: own.allowInsecureRedirects ? true : undefined,
              config: own.config,
            },
            { ...run.io.env },
          );
        } catch (e) {
          if (e instanceof ConfigError) throw new CliError(e.message, EXIT.usage);
          throw e;
        }
        // --log-format, else APPREG_LOG_FORMAT, else the config file, else whether stderr is a terminal.
        const format = config.logFormat ?? ((run.io.stderrIsTTY ?? run.io.isTTY) ? 'pretty' : 'json');
        const { startDaemon, StartupError, limitHeapGrowth, handOver, signalQueue, takeOver, whoTakesOver } =
          await import('../../server/start.js');
        // SIGUSR2: the steps of a hand-over, in order (this daemon's "go" when it takes over, later a new one's
        // "let go"); no other process knows this one before it asks or listens
        const handoverSignals = run.io.onHandoverSignal ? signalQueue(run.io.onHandoverSignal) : undefined;
        // only in the daemon's own process (startDaemon also runs inside tests and benchmarks)
        limitHeapGrowth(config.heapGrowingPercent);
        const { createLogger } = await import('../../logger.js');
        const logger = createLogger({ level: config.logLevel, format, stream: run.io.stderr });
        let handle;
        // (typed here: a static import of the server's types would count as loading it)
        let takeover: { from: number; handedOver: boolean; done(): void } | undefined;
        try {
          if (own.takeover && handoverSignals) {
            // the slow part of a start (loading the code) is behind us: only now does the old daemon stop
            takeover = await takeOver(config.dataDir, handoverSignals).catch((e: Error) => {
              throw new CliError(`cannot take over: ${e.message}`, EXIT.dataDirLocked);
            });
            if (takeover)
              logger.info(
                takeover.handedOver
                  ? `took over from the daemon with pid ${takeover.from}: it keeps its app websockets until this one listens`
                  : `stopped the daemon with pid ${takeover.from} (it does not hand over), starting in its place`,
              );
          }
          handle = await startDaemon(config, { logger, allowFresh: own.allowFresh === true });
        } catch (e) {
          takeover?.done(); // the old daemon stops waiting for a start that failed
          await logger.flush(); // the log's lines before the one-line error the CLI prints
          if (e instanceof CliError) throw e;
          // A documented exit code per reason the daemon gives, and one line for the two a user fixes
          // by choosing again.
          if (e instanceof StartupError) {
            const exit = EXIT_OF_STARTUP[e.reason];
            throw new CliError(exit === undefined ? e.message : must(e.message.split('\n')[0]), exit ?? EXIT.internal, {
              code: `startup_${e.reason}`,
              message: e.message,
            });
          }
          throw e;
        }
        // Start-up messages go through the log, like everything the daemon says (a JSON line each with
        // --log-format json); stdout carries only --json's one document, for scripts.
        if (handle.bootstrapped) {
          logger.info(
            `first start: created workspace ${handle.bootstrapped.workspaceId} and its owner ${handle.bootstrapped.email}; the CLI on this machine uses ${config.dataDir}/credentials.json, no login needed`,
          );
          // The data dir the CLI would find by itself (APPREG_DATA_DIR, else the default); else say it.
          const found = resolveDataDir(undefined, run.io.env, run.io.cwd) === config.dataDir;
          logger.info(
            `to sign a browser in as the owner (who has no password): appreg open${found ? '' : ` --data-dir ${shellWord(config.dataDir)}`}`,
          );
        }
        // Last, so that whoever waits for this line has seen everything before it.
        logger.info(`appreg listening on ${handle.url} (data: ${config.dataDir})`, { pid: process.pid });
        if (out.json) out.print({ url: handle.url, dataDir: config.dataDir, pid: process.pid });
        takeover?.done();
        const signal = await Promise.race([
          stopped,
          handoverAsked(handoverSignals, () => whoTakesOver(must(config).dataDir)),
        ]);
        try {
          if (typeof signal === 'number') {
            logger.info(`handing over to the daemon with pid ${signal}: letting go, keeping the app websockets`);
            // the new daemon replays the journal rather than wait for it to be folded into the data file
            await handle.letGo({ compact: false });
            const how = await handOver(signal, must(handoverSignals));
            logger.info(
              how === 'signal'
                ? 'the new daemon listens (or gave up starting): closing the app websockets'
                : how === 'gone'
                  ? 'the new daemon went away before it listened: closing the app websockets'
                  : 'the new daemon did not say it listens in time: closing the app websockets',
            );
          } else logger.info(`${signal}: shutting down`);
          await handle.close();
        } catch (e) {
          logger.error('shutdown failed', { error: messageOf(e) });
          run.exitCode = EXIT.internal;
        }
        // the log is written asynchronously: its last lines reach stderr before the process ends
        await logger.flush();
      }),
    );
}
