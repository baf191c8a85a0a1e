// The packaged install on Node 24: test/helpers/node-line.ts.
import { nodeLineTest } from '../helpers/node-line.js';

await nodeLineTest(24);
