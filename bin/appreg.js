#!/usr/bin/env -S node --
// The `--` stops Node 20 from reading our `--env-file PATH` option as its own.
import fs from 'node:fs';

// The compiled CLI: in the package (built by prepack), or in a clone once `npm start` / `npm run build` ran.
const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!fs.existsSync(main)) {
  process.stderr.write(
    'appreg: the compiled code is missing (dist/src/cli/main.js). In a clone of appreg, run "npm ci" and then ' +
      '"npm run build" (or "npm start"); an installed package always has it.\n',
  );
  process.exit(1);
}
const cli = await import(main.href);
const io = await import(new URL('../dist/src/client/io.js', import.meta.url).href);

// `appreg apps list | head`: a reader that goes away is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

process.exitCode = await cli.main(process.argv, io.processIo());
