// docs/ci.md's GitLab CI job, run as written: test/helpers/ci-doc-job.ts.
import { ciDocJobTest } from '../helpers/ci-doc-job.js';

await ciDocJobTest('GitLab CI');
