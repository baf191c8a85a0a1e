// docs/ci.md's GitHub Actions job, run as written: test/helpers/ci-doc-job.ts.
import { ciDocJobTest } from '../helpers/ci-doc-job.js';

await ciDocJobTest('GitHub Actions');
