/**
 * An app installed in a bench daemon's workspace as an app on the official SDK is: created through
 * the management API, granted its scopes, its code exchanged at the token endpoint. Gives the
 * app's id and the headers its platform API calls send (the bot token and the app key).
 */
export const BENCH_SCOPES = ['messages:read', 'messages:write', 'channels:list'];

/** The owner's credentials a bench daemon writes to <data-dir>/credentials.json. */
export interface OwnerCredentials {
  workspaceId: string;
  workspaceUserId: string;
  authToken: string;
}

export async function installBenchApp(
  daemonUrl: string,
  creds: OwnerCredentials,
  name: string,
  eventSubscriptions: { url: string; events: string[] },
): Promise<{ appId: string; headers: Record<string, string> }> {
  const base = `${daemonUrl}/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}`;
  const mgmt = (p: string, init: RequestInit = {}) =>
    fetch(base + p, { ...init, headers: { authtoken: creds.authToken, 'content-type': 'application/json' } });
  const m = {
    name,
    displayName: name,
    bot: true,
    botTitle: 'bench',
    scopes: { botScopes: BENCH_SCOPES, userScopes: BENCH_SCOPES },
    shortcuts: [],
    slashCommands: [],
    eventSubscriptions,
    redirectUrls: ['http://localhost:9/redirect'],
  };
  const app = (await (await mgmt('/apps', { method: 'POST', body: JSON.stringify(m) })).json()) as {
    id: string;
    clientSecret: string;
    appKey: string;
  };
  const q = new URLSearchParams({
    clientId: app.id,
    scopes: [...BENCH_SCOPES, ...BENCH_SCOPES.map((s) => `bot:${s}`)].join(','),
    redirectUrl: 'http://localhost:9/redirect',
  });
  const { code } = (await (await mgmt(`/oauth2/grant?${q}`)).json()) as { code: string };
  const form = new FormData();
  for (const [k, v] of Object.entries({ 'client-id': app.id, 'client-secret': app.clientSecret, code }))
    form.append(k, v);
  const tok = (await (await fetch(`${daemonUrl}/oauth2/access`, { method: 'POST', body: form })).json()) as {
    botToken?: string;
  };
  if (!tok.botToken) throw new Error(`install failed: ${JSON.stringify({ app: app.id, tok })}`);
  return {
    appId: app.id,
    headers: { token: tok.botToken, 'x-app-token': app.appKey, 'content-type': 'application/json' },
  };
}
