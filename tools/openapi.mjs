#!/usr/bin/env node
// Writes schemas/openapi.json, the OpenAPI 3.1 description of the daemon's JSON API, from the route tables
// (dist/src/server/routes/http-api.js: method, path, summary, schemas of each route) and the schemas they name
// (schemas/http/*.schema.json, which become components/schemas). The same tables mount the routers and the same
// schemas check every request, so the description says what the daemon does; test/unit/openapi.test.ts keeps
// the file current and compares it with express's router stack. Run `npm run openapi` (it builds first).
//
//   node tools/openapi.mjs           write it
//   node tools/openapi.mjs --check   exit 1 when it is not what the tables and schemas give
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root, writeOrCheck } from './generated-file.mjs';
import { schemaFiles } from './http-validators.mjs';

const outFile = path.join(root, 'schemas/openapi.json');

/** `/apps/:appId` → `/apps/{appId}` */
export const openApiPath = (expressPath) => expressPath.replace(/:(\w+)/g, '{$1}');

/** A component's name for a schema of schemas/http: `apps.fromUrlBody`. */
const componentOf = (ref) => ref.replace('#', '.');

/** The app manifest's schema (schemas/app-manifest.schema.json), which a body of schemas/http may name by its $id. */
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'schemas/app-manifest.schema.json'), 'utf8'));

/** Where a reference of `file` (a schema of schemas/http, or Manifest itself) points in the description. */
function componentRef(ref, file) {
  if (ref === manifest.$id) return '#/components/schemas/Manifest';
  if (!ref.startsWith('#/$defs/')) return ref;
  const name = ref.slice('#/$defs/'.length);
  return file === 'Manifest' ? `#/components/schemas/Manifest/$defs/${name}` : `#/components/schemas/${file}.${name}`;
}

/** A schema with its references to its own file's $defs (and to the manifest) pointed at components. */
function rewriteRefs(node, file) {
  if (Array.isArray(node)) return node.map((n) => rewriteRefs(n, file));
  if (!node || typeof node !== 'object') return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$ref' && typeof v === 'string') out[k] = componentRef(v, file);
    else out[k] = rewriteRefs(v, file);
  }
  return out;
}

const ERROR = {
  type: 'object',
  description: 'The one error body (docs/protocol.md §1).',
  properties: {
    code: { type: 'string', description: 'A stable error code, such as invalid_request or not_found.' },
    message: { type: 'string', description: 'What went wrong, for people.' },
    details: {
      type: 'array',
      description: 'One entry per problem of the input: where (a JSON pointer into it) and what.',
      items: {
        type: 'object',
        properties: { pointer: { type: 'string' }, message: { type: 'string' } },
        required: ['pointer', 'message'],
      },
    },
  },
  required: ['code', 'message'],
};

/** Parameters `in` a place from an object schema's properties; `base` params of the mount point are strings. */
function parameters(spec, files, fullPath) {
  const out = [];
  const named = new Set();
  const props = (ref) => {
    if (!ref) return [{}, []];
    const [file, name] = ref.split('#');
    const s = files[file].$defs[name];
    return [s.properties ?? {}, s.required ?? []];
  };
  const [pathProps] = props(spec.params?.ref);
  for (const m of fullPath.matchAll(/\{(\w+)\}/g)) {
    const name = m[1];
    named.add(name);
    out.push({ name, in: 'path', required: true, schema: rewriteRefs(pathProps[name] ?? { type: 'string' }, '') });
  }
  const [queryProps, queryRequired] = props(spec.query?.ref);
  for (const [name, s] of Object.entries(queryProps)) {
    const { description, ...schema } = s;
    out.push({
      name,
      in: 'query',
      required: queryRequired.includes(name),
      ...(description ? { description } : {}),
      schema,
    });
  }
  return out;
}

const SECURITY = { authtoken: [{ authtoken: [] }], 'app-token': [{ appToken: [] }], none: [] };

/** The description as it is now. */
export async function generate() {
  const { HTTP_API } = await import(pathToFileURL(path.join(root, 'dist/src/server/routes/http-api.js')).href);
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const files = schemaFiles();
  const { $schema: _dialect, $id: _id, ...manifestSchema } = manifest;
  const schemas = { Error: ERROR, Manifest: rewriteRefs(manifestSchema, 'Manifest') };
  for (const [file, doc] of Object.entries(files))
    for (const [name, s] of Object.entries(doc.$defs ?? {})) schemas[`${file}.${name}`] = rewriteRefs(s, file);
  const paths = {};
  for (const router of HTTP_API) {
    for (const [key, spec] of Object.entries(router.routes)) {
      const full = openApiPath(router.base + spec.path);
      const op = {
        operationId: `${router.tag}.${key}`,
        tags: [router.tag],
        summary: spec.summary,
        security: [spec.auth].flat().flatMap((a) => SECURITY[a]),
      };
      const params = parameters(spec, files, full);
      if (params.length) op.parameters = params;
      if (spec.scope) op.description = `Needs the scope ${spec.scope} (else 403 missing_scope).`;
      const body = spec.body ?? spec.form;
      if (body) {
        const types = spec.bodyTypes ?? ['application/json'];
        op.requestBody = {
          required: false,
          content: Object.fromEntries(
            types.map((t) => [t, { schema: { $ref: `#/components/schemas/${componentOf(body.ref)}` } }]),
          ),
        };
      }
      op.responses = {};
      for (const [status, description] of Object.entries(spec.answers))
        op.responses[status] = { description, ...(status === '204' ? {} : { content: { 'application/json': {} } }) };
      op.responses['4XX'] = { $ref: '#/components/responses/Error' };
      op.responses['5XX'] = { $ref: '#/components/responses/Error' };
      paths[full] ??= {};
      if (paths[full][spec.method]) throw new Error(`${spec.method} ${full} is described twice`);
      paths[full][spec.method] = op;
    }
  }
  const doc = {
    openapi: '3.1.0',
    info: {
      title: 'appreg daemon HTTP API',
      version: pkg.version,
      description:
        "The JSON API of appreg's daemon: app management, OAuth, deliveries, the platform API apps call, and sign-in. " +
        'Generated by tools/openapi.mjs from the route tables and schemas/http: every request is checked against ' +
        'these schemas before the daemon acts on it. docs/http-api.md and docs/protocol.md say the rest.',
      license: { name: pkg.license, identifier: pkg.license },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    tags: HTTP_API.filter((r) => r.description).map((r) => ({ name: r.tag, description: r.description })),
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    components: {
      schemas,
      responses: {
        Error: {
          description: 'An error: the status and the code say what (docs/protocol.md §1).',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
      },
      securitySchemes: {
        authtoken: {
          type: 'apiKey',
          in: 'header',
          name: 'Authtoken',
          description: 'A management token (POST /auth/login).',
        },
        appToken: {
          type: 'apiKey',
          in: 'header',
          name: 'token',
          description:
            "An app's user or bot token (the token endpoint); with x-app-token, the app key, for the app's own calls.",
        },
      },
    },
  };
  return JSON.stringify(doc, null, 2) + '\n';
}

await writeOrCheck(import.meta.url, outFile, generate, 'npm run openapi');
