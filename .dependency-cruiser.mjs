// The layers of docs/architecture.md, checked by dependency-cruiser over the TypeScript sources
// (parsed by swc, so type-only imports count as well). npm test runs it (test/unit/layering.test.ts),
// which also shows that each rule catches what it forbids; by hand:
//   npx depcruise src
// A package is matched by its resolved path (node_modules/<name>/) or, when it cannot be resolved,
// by its bare name.
const pkg = (...names) => names.map((n) => `(^|/)node_modules/${n}/|^${n}$`).join('|');
const core = (...names) => names.map((n) => `^(node:)?${n}$`).join('|');

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'Imports run one way: no module reaches itself again through its imports (type-only ones included).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'cli-talks-http',
      comment:
        'The CLI talks to the daemon over HTTP only, through the client layer (src/client/). Besides its own modules and the client it reads the manifest schema (apps validate, offline), the list of console pages (open --path), the clock (its waiting line runs on the clock it is given), the check of a value known to be there (must.ts), the rule for the default data directory (default-data-dir.ts, which serve shares, so that the CLI finds the daemon serve started), the version (version.ts), the words for an unreadable file (file-errors.ts, which appreg test shares), where a JSON text goes wrong (json-syntax.ts, which the console shares) and the checked readers of what was thrown and of JSON of unknown shape (unknown-values.ts); serve and db are the exceptions below.',
      severity: 'error',
      from: { path: '^src/cli/', pathNot: '^src/cli/commands/(serve|db)\\.ts$' },
      to: {
        path: '^src/',
        pathNot:
          '^src/(cli/|client/|apptest/|validation/|console-pages\\.ts$|clock\\.ts$|must\\.ts$|default-data-dir\\.ts$|version\\.ts$|file-errors\\.ts$|json-syntax\\.ts$|unknown-values\\.ts$)',
      },
    },
    {
      name: 'clients-import-no-daemon-code',
      comment:
        "The client layer (src/client/: the HTTP client, credentials, the workspace reads) and appreg test's runner are clients of the daemon like the CLI: the runner starts `appreg serve` as a child process (or uses the daemon given), and both talk to it over HTTP, so they import no part of the daemon.",
      severity: 'error',
      from: { path: '^src/(apptest|client)/' },
      to: { path: [pkg('express', 'ws'), '^src/(server|store|services|delivery|files|model)/'].join('|') },
    },
    {
      name: 'client-below-cli-and-apptest',
      comment:
        'The client layer sits below both of its users: it imports neither the CLI (its commands, its output) nor appreg test, so either can change without the other.',
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/(cli|apptest)/' },
    },
    {
      name: 'apptest-below-cli',
      comment:
        'appreg test is run by a CLI command (cli/commands/test-run.ts), so the CLI may import it, never the other way: what both need of the daemon is in src/client/.',
      severity: 'error',
      from: { path: '^src/apptest/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'cli-loads-daemon-code-lazily',
      comment:
        'serve loads the server, db the store, the data directory lock and the transfers, only when the command runs (a dynamic import), so no other command pays for them.',
      severity: 'error',
      from: { path: '^src/cli/commands/(serve|db)\\.ts$' },
      to: { path: '^src/(server|store|services|delivery|files|model)/', dynamic: false },
    },
    {
      name: 'cli-serve-loads-start-only',
      comment: 'serve starts the daemon through server/start.ts and touches nothing else of it.',
      severity: 'error',
      from: { path: '^src/cli/commands/serve\\.ts$' },
      to: { path: '^src/(server|store|services|delivery|files|model)/', pathNot: '^src/server/start\\.ts$' },
    },
    {
      name: 'cli-db-loads-storage-only',
      comment:
        'db works on the stored data itself: the PostgreSQL schema and transfers, the live backup of an embedded store, the delivery log and file bytes it copies, and the data directory lock (server/data-dir.ts). No service, no daemon.',
      severity: 'error',
      from: { path: '^src/cli/commands/db\\.ts$' },
      to: {
        path: '^src/(server|store|services|delivery|files|model)/',
        pathNot:
          '^src/(server/data-dir\\.ts|store/postgres/|store/backup\\.ts|delivery/log-transfer\\.ts|files/blob-transfer\\.ts)',
      },
    },
    {
      name: 'services-no-transport',
      comment:
        'Services are use-cases: no express, ws or multer, no file system (file bytes go through FileBlobs), nothing of the server or of the clients (CLI, client layer, appreg test).',
      severity: 'error',
      from: { path: '^src/services/' },
      to: {
        path: [pkg('express', 'ws', 'multer'), core('fs', 'fs/promises'), '^src/(server|cli|client|apptest)/'].join(
          '|',
        ),
      },
    },
    {
      name: 'services-change-data-through-transactions',
      comment:
        'Services change data through Store.transaction (store/transaction.ts): of the store they import its contract (store/types.ts) and the lease rule (store/lease.ts) only: no store implementation, not the transaction runner itself, and no retry module of their own (services/conflict.ts was one). That they neither call commit nor name StoreConflict is kept by the lint rule of the same name (tools/lint/eslint.config.mjs).',
      severity: 'error',
      from: { path: '^src/services/' },
      to: { path: '^src/store/|^src/services/conflict\\.ts$', pathNot: '^src/store/(types|lease)\\.ts$' },
    },
    {
      name: 'delivery-no-services-or-server',
      comment:
        'Delivery imports neither services, the server nor the clients (nor express): what it needs of them (an app directory, the socket connections) it defines as interfaces, and compose.ts hands in the implementations.',
      severity: 'error',
      from: { path: '^src/delivery/' },
      to: { path: [pkg('express'), '^src/(services|server|cli|client|apptest)/'].join('|') },
    },
    {
      name: 'routes-through-services',
      comment:
        'Routes speak HTTP and call services: no store, no keys (crypto.ts), no websockets, nothing of delivery; they receive what they need as typed dependencies.',
      severity: 'error',
      from: { path: '^src/server/routes/' },
      to: { path: [pkg('ws'), '^src/(store|delivery)/', '^src/crypto\\.ts$'].join('|') },
    },
    {
      name: 'pg-only-in-store-postgres',
      comment: 'One door to the database: only store/postgres/ imports the driver.',
      severity: 'error',
      from: { pathNot: '^src/store/postgres/' },
      to: { path: pkg('pg', 'pg-[a-z-]+') },
    },
    {
      name: 'store-postgres-loaded-lazily',
      comment:
        'The PostgreSQL store (and with it pg) is loaded only when a database URL is configured: start.ts and db import it dynamically.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/store/postgres/' },
      to: { path: '^src/store/postgres/', dynamic: false },
    },
    {
      name: 'store-below-everything',
      comment:
        'The store knows no service, delivery, server, client (CLI, client layer, appreg test) or file bytes: only its contract and the model of what it keeps.',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/(services|delivery|server|cli|client|apptest|files)/' },
    },
    {
      name: 'model-is-a-leaf',
      comment:
        'The model (record shapes, table names, ids derived from keys) reads nothing but leaf modules and the manifest type.',
      severity: 'error',
      from: { path: '^src/model/' },
      to: { path: '^src/(services|delivery|server|cli|client|apptest|files|store)/' },
    },
    {
      name: 'files-below-services',
      comment: 'File bytes (blob stores) are storage: they know no service, delivery, server or client.',
      severity: 'error',
      from: { path: '^src/files/' },
      to: { path: '^src/(services|delivery|server|cli|client|apptest)/' },
    },
    {
      name: 'leaf-modules-are-leaves',
      comment:
        'The modules at the top of src/ (errors, config, logger, clock, crypto, the poller…) import only one another.',
      severity: 'error',
      from: { path: '^src/[^/]+\\.ts$' },
      to: { path: '^src/[^/]+/' },
    },
    {
      name: 'lowdb-only-in-bench',
      comment: 'lowdb is only the yardstick of bench/store-write.ts (a devDependency): the daemon never loads it.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: pkg('lowdb') },
    },
  ],
  options: {
    // swc parses TypeScript here: TypeScript 7 has no JavaScript API for dependency-cruiser to use.
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    // got, and other ESM-only packages, export under "import" only
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
