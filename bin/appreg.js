#!/usr/bin/env -S node --
// The `--` stops Node 20 from reading our `--env-file PATH` option as its own.
import { main } from '../dist/src/cli/main.js';
import { processIo } from '../dist/src/cli/run.js';

// `appreg apps list | head`: a reader that goes away is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

process.exitCode = await main(process.argv, processIo());
