#!/usr/bin/env node
// Writes schemas/http/validators.cjs: a validator for every `$defs` entry of schemas/http/*.schema.json (the HTTP
// API's path parameters, queries and bodies), by Ajv's standalone code generation; `--check` only says whether the
// file is current (test/unit/openapi.test.ts).
//
// Why generated and committed, not compiled at start: the same reason as tools/config-validator.mjs: loading Ajv
// and compiling dozens of schemas would cost a start far more than reading one module of plain functions.
// Each validator is exported as `<file>#<name>` (apps#appPath). Schemas named `…Query` or `…Path` see text (a query
// string, a path segment), so their validators coerce a number or a boolean written as text; bodies are JSON and
// are never coerced. One entry is not a `$defs` schema of its own: `apps#manifestBody` is the app manifest
// (schemas/app-manifest.schema.json), compiled as its own validator always was: lengths counted in characters (Ajv's
// `unicode`, inlined here so the file still needs no Ajv) and its two URL formats, whose code is written into the
// file from this one (MANIFEST_FORMATS).
//
//   node tools/http-validators.mjs           write it after changing a schema
//   node tools/http-validators.mjs --check   exit 1 when it is not what the schemas give
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { ajvLogger, root, standaloneModule, writeOrCheck } from './generated-file.mjs';

const require = createRequire(import.meta.url);
const { Ajv2020, _ } = require('ajv/dist/2020.js');
const standaloneCode = require('ajv/dist/standalone/index.js').default;

const dir = path.join(root, 'schemas/http');
const outFile = path.join(dir, 'validators.cjs');

/** Every schema file of schemas/http, by its short name (apps for apps.schema.json). */
export function schemaFiles() {
  return Object.fromEntries(
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.schema.json'))
      .sort()
      .map((f) => [f.slice(0, -'.schema.json'.length), JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))]),
  );
}

const textual = (name) => /(Query|Path)$/.test(name);

/** The entry whose validator is the manifest's schema itself, compiled with the manifest's options. */
const MANIFEST_ENTRY = 'apps#manifestBody';

/**
 * An http(s) URL with a host and no user or password, written without blanks or control characters: what the
 * manifest's URL fields hold (its `http-url` format).
 */
function isHttpUrl(s) {
  if (/[\s\u0000-\u001f\u007f]/.test(s)) return false;
  try {
    const u = new URL(s);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname !== '' && !u.username && !u.password;
  } catch {
    return false;
  }
}

/** The manifest's formats: each function's own source goes into the generated file. */
const MANIFEST_FORMATS = {
  'http-url': isHttpUrl,
  'http-url-or-empty': function httpUrlOrEmpty(s) {
    return s === '' || isHttpUrl(s);
  },
};

/** The length of a string in characters (a surrogate pair is one), as Ajv's `unicode` option counts it. */
function ucs2length(str) {
  let length = 0;
  for (let pos = 0; pos < str.length; length++) {
    const value = str.charCodeAt(pos++);
    if (value >= 0xd800 && value <= 0xdbff && pos < str.length && (str.charCodeAt(pos) & 0xfc00) === 0xdc00) pos++;
  }
  return length;
}

/** Whether two JSON values are equal (for `uniqueItems` of items whose type Ajv cannot tell), as Ajv's runtime says. */
function jsonEqual(a, b) {
  if (a === b) return true;
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object' || Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
}

/** Ajv's run-time helpers the manifest's code calls, each by the function of this file that stands in for it. */
const RUNTIME = {
  'require("ajv/dist/runtime/ucs2length").default': ucs2length,
  'require("ajv/dist/runtime/equal").default': jsonEqual,
};

/** The manifest's validator, exported as MANIFEST_ENTRY: app-manifest.schema.json with its own options. */
function manifestPart() {
  const doc = JSON.parse(fs.readFileSync(path.join(root, 'schemas/app-manifest.schema.json'), 'utf8'));
  const ajv = new Ajv2020({
    allErrors: true,
    strict: true,
    allowUnionTypes: true,
    logger: ajvLogger,
    code: { source: true, formats: _`manifestFormats` },
  });
  for (const [name, validate] of Object.entries(MANIFEST_FORMATS)) ajv.addFormat(name, { type: 'string', validate });
  ajv.addSchema(doc);
  let code = standaloneCode(ajv, { [MANIFEST_ENTRY]: doc.$id });
  for (const [helper, f] of Object.entries(RUNTIME)) code = code.split(helper).join(f.name);
  const formats = Object.entries(MANIFEST_FORMATS)
    .map(([name, f]) => `  ${JSON.stringify(name)}: { type: 'string', validate: ${f.name} },`)
    .join('\n');
  return [
    `${isHttpUrl}`,
    `${MANIFEST_FORMATS['http-url-or-empty']}`,
    ...Object.values(RUNTIME).map((f) => `${f}`),
    `const manifestFormats = {\n${formats}\n};`,
    code,
  ].join('\n');
}

/** The validators' source for the schemas as they are now. */
export function generate() {
  const files = schemaFiles();
  // strictTypes off: a body of the platform API may be absent or of any type and its `properties` apply when it is an
  // object (its service says what else it needs), which strict typing refuses to compile
  const make = (coerceTypes) =>
    new Ajv2020({
      allErrors: true,
      strict: true,
      strictTypes: false,
      allowUnionTypes: true,
      unicode: false,
      coerceTypes,
      logger: ajvLogger,
      code: { source: true },
    });
  const parts = [];
  for (const coerce of [false, true]) {
    const ajv = make(coerce);
    const refs = {};
    for (const [file, doc] of Object.entries(files)) {
      ajv.addSchema(doc);
      for (const name of Object.keys(doc.$defs ?? {}))
        if (textual(name) === coerce && `${file}#${name}` !== MANIFEST_ENTRY)
          refs[`${file}#${name}`] = `${doc.$id}#/$defs/${name}`;
    }
    if (Object.keys(refs).length) parts.push(standaloneCode(ajv, refs));
  }
  parts.push(manifestPart());
  // each generated part is a CommonJS module of its own: run in a function, its exports merged into this one's
  const code =
    parts
      .map(
        (c, i) =>
          `const part${i} = (function () {\nconst module = { exports: {} };\nconst exports = module.exports;\n${c}\nreturn module.exports;\n})();`,
      )
      .join('\n') + `\nmodule.exports = Object.assign({}, ${parts.map((_c, i) => `part${i}`).join(', ')});`;
  return standaloneModule(code, 'schemas/http/*.schema.json by tools/http-validators.mjs');
}

await writeOrCheck(import.meta.url, outFile, generate, 'npm run openapi');
