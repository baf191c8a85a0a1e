// A file the repository commits but a tool writes (schemas/config.validate.cjs, schemas/http/validators.cjs,
// schemas/openapi.json): the tool run as a script writes it; with `--check` it only says whether the file is what
// the tool would write now (the tests run that), and exits 1 naming the command that brings it up to date.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/**
 * When the module at `moduleUrl` is the script node runs: `make()`'s text written to `outFile`, or with `--check`
 * compared with it (`fix`: the command to run when it differs).
 */
export async function writeOrCheck(moduleUrl, outFile, make, fix) {
  if (!process.argv[1] || path.resolve(process.argv[1]) !== fileURLToPath(moduleUrl)) return;
  const text = await make();
  if (!process.argv.includes('--check')) return fs.writeFileSync(outFile, text);
  const current = fs.existsSync(outFile) ? fs.readFileSync(outFile, 'utf8') : '';
  if (current !== text) {
    console.error(`${path.relative(root, outFile)} is not what its sources give: run ${fix}`);
    process.exit(1);
  }
}

/** Ajv's logger, quiet about `unicode: false` (deprecated, but what keeps standalone code free of Ajv's helper). */
export const ajvLogger = {
  log: console.log,
  error: console.error,
  warn: (m) => /option unicode/.test(m) || console.warn(m),
};

/**
 * Standalone validators' code as a module that needs nothing at run time (no Ajv): refused when the schemas made
 * it require something, else headed with where it comes from.
 */
export function standaloneModule(code, from) {
  if (/\brequire\(/.test(code))
    throw new Error(`the code generated from ${from} needs Ajv at run time; keep the schemas to plain keywords`);
  return `// Generated from ${from}: do not edit, run the tool that writes it (tools/).\n${code}\n`;
}
