#!/usr/bin/env node
// Writes schemas/config.validate.cjs, the daemon configuration's validator, from schemas/config.schema.json with
// Ajv's standalone code generation; `--check` only says whether the file is current (test/unit/config-schema.test.ts).
//
// Why generated and committed, not compiled at start: loading Ajv and compiling the schema costs about 120 ms of
// CPU, more than the rest of reading the configuration by far, and `appreg serve` loads Ajv only when a manifest
// is first checked (a restart must be quick). The generated code needs nothing at run time: no Ajv, no formats
// (`unicode: false` keeps string lengths to `.length`, so no runtime helper is required).
//
//   node tools/config-validator.mjs           write it after changing the schema
//   node tools/config-validator.mjs --check   exit 1 when it is not what the schema gives
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { ajvLogger, root, standaloneModule, writeOrCheck } from './generated-file.mjs';

const require = createRequire(import.meta.url);
const { Ajv2020 } = require('ajv/dist/2020.js');
const standaloneCode = require('ajv/dist/standalone/index.js').default;

const schemaFile = path.join(root, 'schemas/config.schema.json');
const outFile = path.join(root, 'schemas/config.validate.cjs');

/** The validator's source for the schema as it is now. */
export function generate() {
  const schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8'));
  const ajv = new Ajv2020({ allErrors: true, strict: true, unicode: false, logger: ajvLogger, code: { source: true } });
  // what a value may be, in words, for the error message (src/config.ts): an annotation, no check
  ajv.addKeyword({ keyword: 'x-allowed', schemaType: 'string' });
  ajv.addSchema(schema);
  const code = standaloneCode(ajv, { validateConfig: schema.$id });
  return standaloneModule(code, 'schemas/config.schema.json by tools/config-validator.mjs');
}

await writeOrCheck(import.meta.url, outFile, generate, 'node tools/config-validator.mjs');
