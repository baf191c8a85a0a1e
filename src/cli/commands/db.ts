/**
 * appreg db: the stored data itself. For the PostgreSQL database several daemons share, `migrate` creates or
 * updates its schema (daemons also do it at start), `import` copies a data directory's records into an empty
 * database, `export` copies a database back into a new data directory (the key file is not copied: it stays with
 * the user, who gives it to every daemon). For the embedded store, `backup` copies a data directory, key file
 * included, while its daemon runs. Nothing is ever overwritten, and every copy is read back (records and a digest
 * per table) before it is reported.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { table, type Out } from '../output.js';
import { CliError, EXIT } from '../../client/exit.js';
import { action, examples } from '../options.js';
import type { Run } from '../run.js';
import { must } from '../../must.js';
import { resolveDataDir } from '../../default-data-dir.js';
import { messageOf } from '../../unknown-values.js';

const URL_OPTION = [
  '--database-url <url>',
  'PostgreSQL URL, e.g. postgres://appreg:secret@127.0.0.1:5432/appreg [APPREG_DATABASE_URL]',
] as const;

interface TableSummary {
  table: string;
  records: number;
  digest: string;
}

/** The database URL (option, else APPREG_DATABASE_URL) and its form for output, without the password. */
async function databaseUrl(run: Run, given: unknown): Promise<{ url: string; shown: string }> {
  const url = typeof given === 'string' ? given : run.io.env.APPREG_DATABASE_URL;
  if (!url) throw new CliError('--database-url (or APPREG_DATABASE_URL) is required', EXIT.usage);
  const [{ isPostgresUrl }, { redactUrl }] = await Promise.all([
    import('../../config.js'),
    import('../../store/postgres/url.js'),
  ]);
  if (!isPostgresUrl(url))
    throw new CliError(
      `--database-url must be a PostgreSQL URL such as postgres://appreg:secret@127.0.0.1:5432/appreg, not ${redactUrl(url)}`,
      EXIT.usage,
    );
  return { url, shown: redactUrl(url) };
}

/** Errors as one line: refusals are usage errors (choose another target), the rest internal. */
async function oneLine<T>(what: string, shown: string, fn: () => Promise<T>): Promise<T> {
  const { TransferRefused } = await import('../../store/postgres/transfer.js');
  const { StartupError } = await import('../../server/data-dir.js');
  try {
    return await fn();
  } catch (e) {
    if (e instanceof CliError) throw e;
    if (e instanceof TransferRefused) throw new CliError(e.message, EXIT.usage);
    if (e instanceof StartupError && e.reason === 'locked')
      throw new CliError(must(e.message.split('\n')[0]), EXIT.dataDirLocked);
    const msg = messageOf(e).split('\n');
    const detail =
      msg.length > 1
        ? `: ${msg
            .slice(1)
            .map((l) => l.trim())
            .join('; ')}`
        : '';
    throw new CliError(`${what} failed (${shown}): ${msg[0]}${detail}`, EXIT.internal);
  }
}

/**
 * Hold the data directory's daemon lock while `fn` runs: no daemon may use it meanwhile. When one
 * does, exit 8 with what to do (`todo`: for import, stop the daemon and run the import again).
 */
async function withLock<T>(dir: string, todo: (daemon: string) => string, fn: () => Promise<T>): Promise<T> {
  const { acquireLock, StartupError } = await import('../../server/data-dir.js');
  let release: () => void;
  try {
    release = acquireLock(dir);
  } catch (e) {
    if (!(e instanceof StartupError) || e.reason !== 'locked') throw e;
    const pid = /\(pid (\d+)\)/.exec(e.message)?.[1];
    throw new CliError(todo(pid ? `a daemon (pid ${pid})` : 'a daemon'), EXIT.dataDirLocked);
  }
  try {
    return await fn();
  } finally {
    release();
  }
}

/** What the tables kept outside the embedded store's data file hold, for people. */
const KIND_OF: Record<string, string> = {
  deliveryLog: 'the delivery log',
  deliveryAttempts: 'its attempts',
  deliveryStates: 'its states',
  fileBlobs: 'uploaded files',
  fileBlobChunks: 'their bytes, in chunks',
};

function report(
  out: Out,
  data: Record<string, unknown> & { tables: TableSummary[]; records: number },
  verb: string,
  note: string,
  verified = 'verified: the same records and digests on both sides.',
): void {
  out.print(data, (c) =>
    [
      table(
        c,
        ['TABLE', 'RECORDS', 'DIGEST (sha256)'],
        data.tables.map((s) => [
          `${s.table}${KIND_OF[s.table] ? ` (${KIND_OF[s.table]})` : ''}`,
          String(s.records),
          s.digest.slice(0, 16),
        ]),
      ),
      `${verb} ${data.records} records in ${data.tables.length} tables; ${verified}`,
      c.yellow(note),
    ].join('\n'),
  );
}

/**
 * What the data directory keeps outside its data file, added to its records as the database keeps
 * them: the delivery log (deliveries/) and uploaded files' bytes (files/).
 */
async function withOutside(
  dir: string,
  data: Map<string, Map<string, object>>,
): Promise<Map<string, Map<string, object>>> {
  const { readLogDir, logRecordsOf } = await import('../../delivery/log-transfer.js');
  const { readBlobDir, HEADS, CHUNKS } = await import('../../files/blob-transfer.js');
  const deliveries = readLogDir(dir);
  if (deliveries.length) for (const [table, records] of logRecordsOf(deliveries)) data.set(table, records);
  const blobs = readBlobDir(dir);
  if (blobs.heads.size) {
    data.set(HEADS, blobs.heads);
    data.set(CHUNKS, blobs.chunks);
  }
  return data;
}

/**
 * db export, with the delivery log and the files' bytes written as the embedded store keeps them, and verified by
 * reading them back.
 */
async function exportWithOutside(
  url: string,
  to: string,
  logger: { warn(msg: string): void },
): Promise<TransferSummary> {
  const { exportToDataDir } = await import('../../store/postgres/transfer.js');
  const { summarize, differences } = await import('../../store/postgres/digest.js');
  const { readLogDir, deliveriesOfRecords, writeLogDir, DELIVERY_LOG_TABLES } =
    await import('../../delivery/log-transfer.js');
  const { readBlobDir, writeBlobDir, HEADS, CHUNKS } = await import('../../files/blob-transfer.js');
  const r = await exportToDataDir(url, to, logger, [...DELIVERY_LOG_TABLES, HEADS, CHUNKS]);
  const none = new Map<string, object>();
  const deliveries = deliveriesOfRecords(r.outside);
  writeLogDir(to, deliveries);
  writeBlobDir(to, r.outside.get(HEADS) ?? none, r.outside.get(CHUNKS) ?? none);
  // Read back: the deliveries (compared as deliveries: the order of puts is the database's own) and the blobs.
  const byId = (recs: Array<{ id: string }>) => new Map<string, object>(recs.map((x) => [x.id, x]));
  const back = readBlobDir(to);
  const wanted = summarize(
    new Map([
      ['deliveryLog', byId(deliveries)],
      [HEADS, r.outside.get(HEADS) ?? none],
      [CHUNKS, r.outside.get(CHUNKS) ?? none],
    ]),
  );
  const got = summarize(
    new Map<string, Map<string, object>>([
      ['deliveryLog', byId(readLogDir(to))],
      [HEADS, back.heads],
      [CHUNKS, back.chunks],
    ]),
  );
  const diff = differences(wanted, got);
  if (diff.length) throw new Error(`the copy does not match the database:\n  ${diff.join('\n  ')}`);
  // Reported as import and backup count a data directory (the delivery log as the database keeps it: a record per
  // delivery, per attempt, per state), so that an export of an import prints the same tables and counts.
  const outside = summarize(await withOutside(to, new Map()));
  const tables = [...r.tables, ...outside].sort((a, b) => (a.table < b.table ? -1 : a.table > b.table ? 1 : 0));
  const source = new Map(summarize(r.outside).map((x) => [x.table, x.records]));
  const leftOut = outside
    .filter((x) => (source.get(x.table) ?? 0) > x.records)
    .map((x) => `${must(source.get(x.table)) - x.records} of ${x.table}`);
  return { tables, records: tables.reduce((n, x) => n + x.records, 0), leftOut };
}

interface TransferSummary {
  tables: TableSummary[];
  records: number;
  /** The database's records of the delivery log that belong to no delivery: not copied ("3 of deliveryAttempts"). */
  leftOut?: string[];
}

export function registerDb(program: Command, run: Run): void {
  const db = program
    .command('db')
    .description(
      'the stored data: a backup of a data directory while its daemon runs; the PostgreSQL database of daemons that share one (schema, import from and export to a data directory)',
    );
  const storeLogger = { warn: (msg: string) => void run.io.stderr.write(`warning: ${msg}\n`) };

  db.command('migrate')
    .description('create or update the schema of the database (daemons also do it when they start)')
    .option(...URL_OPTION)
    .addHelpText(
      'after',
      examples(
        'appreg db migrate --database-url postgres://appreg:secret@db:5432/appreg',
        'APPREG_DATABASE_URL=postgres://appreg@db/appreg appreg db migrate --json',
      ),
    )
    .action(
      action(run, async ({ cmd, out }) => {
        const { url, shown } = await databaseUrl(run, cmd.opts().databaseUrl);
        const { migrate } = await import('../../store/postgres/migrations.js');
        const r = await oneLine('migrate', shown, () => migrate(url));
        out.print({ database: shown, applied: r.applied, indexesCreated: r.indexes }, () =>
          r.applied.length || r.indexes.length
            ? `migrated ${shown}: applied ${r.applied.length ? `version ${r.applied.join(', ')}` : 'no migration'}, created ${r.indexes.length} indexes`
            : `${shown} is up to date`,
        );
      }),
    );

  db.command('import')
    .description('copy every record of a data directory (no daemon running on it) into an empty database')
    .requiredOption('--from <data-dir>', 'the data directory to copy from; it is not modified')
    .option(...URL_OPTION)
    .addHelpText(
      'after',
      `${examples('appreg db import --from ./data --database-url postgres://appreg:secret@db:5432/appreg')}

Refuses when the database already holds records, or a daemon runs on the data directory (exit 8).
Then give every daemon on the database the key file of the data directory (secret.key).`,
    )
    .action(
      action(run, async ({ cmd, out }) => {
        const own = cmd.opts();
        const { url, shown } = await databaseUrl(run, own.databaseUrl);
        const from = path.resolve(run.io.cwd, String(own.from));
        const { readDataDir, importIntoDatabase } = await import('../../store/postgres/transfer.js');
        const running = (daemon: string) =>
          `${daemon} is running on ${from}: stop it first (Ctrl-C in its terminal), then run appreg db import again; the import reads the data directory while nothing changes it`;
        const r = await oneLine('import', shown, () =>
          withLock(from, running, async () =>
            importIntoDatabase(url, await withOutside(from, await readDataDir(from, storeLogger))),
          ),
        );
        const note = `the key file is not in the database: give every daemon on it a copy of ${path.join(from, 'secret.key')} (or the keyFile it used)`;
        report(
          out,
          { database: shown, from, records: r.records, tables: r.tables, keyFile: note },
          `imported into ${shown}:`,
          note,
        );
      }),
    );

  db.command('export')
    .description('copy every record of the database into a new, empty data directory (the embedded store)')
    .requiredOption('--to <data-dir>', 'the data directory to create; it must not exist or be empty')
    .option(...URL_OPTION)
    .addHelpText(
      'after',
      `${examples('appreg db export --to ./data-copy --database-url postgres://appreg:secret@db:5432/appreg')}

Refuses to write into a directory that holds anything. The key file is not exported: copy the daemons'
secret.key into the new directory before running appreg serve on it.`,
    )
    .action(
      action(run, async ({ cmd, out }) => {
        const own = cmd.opts();
        const { url, shown } = await databaseUrl(run, own.databaseUrl);
        const to = path.resolve(run.io.cwd, String(own.to));
        const { occupied } = await import('../../store/postgres/transfer.js');
        const { ensureDataDir } = await import('../../server/data-dir.js');
        const found = occupied(to);
        if (found.length)
          throw new CliError(
            `${to} is not empty (${found.slice(0, 3).join(', ')}${found.length > 3 ? ', …' : ''}): export only into a new or empty directory`,
            EXIT.usage,
          );
        const created = !fs.existsSync(to);
        ensureDataDir(to);
        const running = (daemon: string) => `${daemon} is running on ${to}: export into another directory`;
        const r = await oneLine('export', shown, () =>
          withLock(to, running, () => exportWithOutside(url, to, storeLogger)),
        ).catch((e: unknown) => {
          // A failed export leaves nothing behind in a directory it made (a retry would find it not empty).
          if (created) fs.rmSync(to, { recursive: true, force: true });
          throw e;
        });
        const note = `the key file is not in the database: copy the daemons' secret.key to ${path.join(to, 'secret.key')} before appreg serve --data-dir ${to}`;
        const leftOut = r.leftOut?.length
          ? ` Not copied: ${r.leftOut.join(', ')} (records of the delivery log that belong to no delivery).`
          : '';
        report(
          out,
          {
            database: shown,
            to,
            records: r.records,
            tables: r.tables,
            keyFile: note,
            ...(r.leftOut?.length ? { leftOut: r.leftOut } : {}),
          },
          `exported to ${to}:`,
          note,
          `verified: the same records and digests on both sides (the delivery log, delivery by delivery).${leftOut}`,
        );
      }),
    );
  db.command('backup')
    .description('copy a data directory (the embedded store) while its daemon runs, key file included')
    .requiredOption('--to <dir>', 'the directory to create; it must not exist or be empty')
    .option('--from <data-dir>', 'the data directory to copy (default: --data-dir, APPREG_DATA_DIR or the default one)')
    .addHelpText(
      'after',
      `${examples('appreg db backup --to /var/backups/appreg/$(date +%F)', 'appreg db backup --from ./data --to ./data-backup --json')}

The copy is the store as it stood at one moment (a daemon may keep running), the key file, the config file, the
delivery log and the uploaded files; it is read back and its records counted before it is reported. Restore: stop the
daemon, put the copy in place of the data directory (or run appreg serve --data-dir <the copy>), start it.
The copy holds the key: keep it as private as the data directory. For PostgreSQL, appreg db export is the backup.`,
    )
    .action(
      action(run, async ({ o, cmd, out }) => {
        const own = cmd.opts();
        const from =
          own.from === undefined
            ? resolveDataDir(o.dataDir, run.io.env, run.io.cwd)
            : path.resolve(run.io.cwd, String(own.from));
        const to = path.resolve(run.io.cwd, String(own.to));
        if (!fs.existsSync(from)) throw new CliError(`no data directory at ${from}`, EXIT.usage);
        const { occupied, readDataDir } = await import('../../store/postgres/transfer.js');
        const { backupDataDir, BackupError } = await import('../../store/backup.js');
        const { summarize } = await import('../../store/postgres/digest.js');
        const { ensureDataDir } = await import('../../server/data-dir.js');
        const found = occupied(to);
        if (found.length)
          throw new CliError(
            `${to} is not empty (${found.slice(0, 3).join(', ')}${found.length > 3 ? ', …' : ''}): back up only into a new or empty directory`,
            EXIT.usage,
          );
        const created = !fs.existsSync(to);
        ensureDataDir(to);
        const r = await oneLine('backup', from, async () => {
          try {
            const copy = await backupDataDir(from, to);
            const tables = summarize(await withOutside(to, await readDataDir(to, storeLogger)));
            return { ...copy, tables, records: tables.reduce((n, x) => n + x.records, 0) };
          } catch (e) {
            if (e instanceof BackupError) throw new CliError(e.message, EXIT.usage);
            throw e;
          }
        }).catch((e: unknown) => {
          // A failed backup leaves nothing behind in a directory it made (a retry would find it not empty).
          if (created) fs.rmSync(to, { recursive: true, force: true });
          throw e;
        });
        const keyFile = r.files.includes('secret.key')
          ? 'the copy holds the key file: keep it as private as the data directory'
          : `no key file in ${from} (the daemon's keyFile is elsewhere): keep a copy of it with this backup`;
        report(
          out,
          { from, to, records: r.records, tables: r.tables, files: r.files.length, keyFile },
          `backed up ${from} to ${to}:`,
          keyFile,
          'read back from the copy: it opens.',
        );
      }),
    );
}
