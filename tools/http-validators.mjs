#!/usr/bin/env node
// Writes schemas/http/validators.cjs: a validator for every `$defs` entry of schemas/http/*.schema.json (the HTTP
// API's path parameters, queries and bodies), by Ajv's standalone code generation; `--check` only says whether the
// file is current (test/unit/openapi.test.ts).
//
// Why generated and committed, not compiled at start: the same reason as tools/config-validator.mjs: loading Ajv
// and compiling dozens of schemas would cost a start far more than reading one module of plain functions.
// Each validator is exported as `<file>#<name>` (apps#appPath). Schemas named `…Query` or `…Path` see text (a query
// string, a path segment), so their validators coerce a number or a boolean written as text; bodies are JSON and
// are never coerced.
//
//   node tools/http-validators.mjs           write it after changing a schema
//   node tools/http-validators.mjs --check   exit 1 when it is not what the schemas give
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { ajvLogger, root, standaloneModule, writeOrCheck } from './generated-file.mjs';

const require = createRequire(import.meta.url);
const { Ajv2020 } = require('ajv/dist/2020.js');
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
        if (textual(name) === coerce) refs[`${file}#${name}`] = `${doc.$id}#/$defs/${name}`;
    }
    if (Object.keys(refs).length) parts.push(standaloneCode(ajv, refs));
  }
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
