// The packaged install on Node 20: test/helpers/node-line.ts.
import { nodeLineTest } from '../helpers/node-line.js';

await nodeLineTest(20);
