#!/usr/bin/env -S node --
// The `--` stops Node 20 from reading our `--env-file PATH` option as its own.
import { main } from '../dist/src/cli/main.js';

process.exitCode = await main(process.argv);
