/**
 * The standup example with two people, as the recorder's tests use it: a test daemon, examples/standup-app running
 * and authorized by the owner, and Dev, a member of the workspace (dev@example.com). Everything stops at teardown.
 */
import { startTestDaemon, type TestDaemon } from './daemon.js';
import { startExample, type ExampleApp } from './example-app.js';

export async function standupWithTwoPeople(t: Tap.Test): Promise<{ d: TestDaemon; app: ExampleApp }> {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await startExample(t, d, 'standup-app');
  t.equal((await app.cli(['authorize', app.appId, '--follow', '--json'])).code, 0, 'the owner authorized it');
  const dev = await d.api(`/workspaces/${d.workspaceId}/workspaceUsers`, {
    method: 'POST',
    json: { email: 'dev@example.com', name: 'Dev', password: 'correct horse battery' },
  });
  t.equal(dev.status, 201, 'Dev is a member');
  return { d, app };
}
