/**
 * Who posted a message, in words, for a failure that lists messages: the app under test, another
 * app (by its name and id, when the owner authorized it; else its bot), or a person (by the
 * suite's name for them). On a daemon given with --url, other apps of the workspace hear what is
 * said in a test's channel too; a failure says when a message came from one of them.
 */
import type { TestContext } from './context.js';

export interface Author {
  /** "Standup (app_…), the app under test", "Standup (app_…), another app", "dev". */
  shown: string;
  /** A bot of an app other than the one under test. */
  otherApp: boolean;
  /** For another app: its name and id, as a headline names it. */
  app?: string;
}

type Names = (authorId: string) => Author;

/** How the authors of this test's messages read: the workspace's users and the apps the owner authorized. */
export async function authorNames(ctx: TestContext): Promise<Names> {
  const { api, app, users } = ctx.env;
  const [people, apps] = await Promise.all([
    api.users().catch(() => []),
    api
      .clientOf(users.get('owner')?.id ?? '')
      .then((c) => api.authorizations(c))
      .catch(() => []),
  ]);
  const suiteName = new Map([...users].map(([name, u]) => [u.id, name]));
  const byId = new Map(people.map((u) => [u.id, u]));
  const appOfBot = new Map(apps.flatMap((a) => (a.botId ? [[a.botId, a.app] as const] : [])));
  const self = `${app.displayName || app.name} (${app.id})`;
  return (id) => {
    if (app.botId && id === app.botId) return { shown: `${self}, the app under test`, otherApp: false };
    const name = suiteName.get(id);
    if (name) return { shown: name, otherApp: false };
    const other = appOfBot.get(id);
    if (other) {
      const named = `${other.displayName || other.name || 'an app'} (${other.id})`;
      return { shown: `${named}, another app`, otherApp: true, app: named };
    }
    const u = byId.get(id);
    if (u?.isAddonBot) {
      const named = `${u.name} (its bot ${id})`;
      return { shown: `${named}, another app`, otherApp: true, app: named };
    }
    return { shown: u ? u.name : id, otherApp: false };
  };
}

/** The app under test as a failure names it. */
export const underTest = (ctx: TestContext) =>
  `${ctx.env.app.displayName || ctx.env.app.name} (${ctx.env.app.id}), the app under test`;
