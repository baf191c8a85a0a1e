/**
 * Messages posted through the platform API (POST /v1/channels/{c}/messages with a bot token, as
 * the SDK's ctx.say() to a channel does) against the management API's `get` of an app, side by
 * side in one run: 50 connections, alternating rounds, daemon in its own process, fsync on,
 * the platform's rate limits off (platformRateLimits=false). Target: at least 0.7 of `get`.
 * Run: npm run bench:messages   (about a minute)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { load, startDaemonProcess, writeResult, type LoadResult } from './lib.js';
import { must } from '../src/must.js';
import { installBenchApp, type OwnerCredentials } from './platform-app.js';

const CONC = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-'));
  fs.writeFileSync(
    path.join(dir, 'config.json'),
    JSON.stringify({ platformRateLimits: false, rateLimitManagementWrites: 0 }),
  );
  const d = await startDaemonProcess(dir);
  try {
    const creds = JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8')) as OwnerCredentials;
    const base = `/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}`;
    const { appId, headers: sdk } = await installBenchApp(d.url, creds, 'bench-say', { url: '', events: [] });
    const channels = (await (await fetch(`${d.url}/v1/channels`, { headers: sdk })).json()) as Array<{
      channel: { id: string; name: string };
    }>;
    const general = must(channels.find((c) => c.channel.name === 'general')).channel.id;

    const pool = new Pool(d.url, { connections: CONC, pipelining: 1 });
    const post = async (i: number) => {
      const r = await pool.request({
        method: 'POST',
        path: `/v1/channels/${general}/messages`,
        headers: sdk,
        body: JSON.stringify({ text: `message ${i}`, blocks: [], attachments: [], files: [] }),
      });
      await r.body.dump();
      return r.statusCode === 200;
    };
    const get = async () => {
      const r = await pool.request({
        method: 'GET',
        path: `${base}/apps/mine/${appId}`,
        headers: { authtoken: creds.authToken },
      });
      await r.body.dump();
      return r.statusCode === 200;
    };
    await load(post, { concurrency: CONC, seconds: 3 }); // warm-up
    await load(get, { concurrency: CONC, seconds: 3 });
    const rounds: Array<{ post: LoadResult; get: LoadResult }> = [];
    for (let r = 0; r < ROUNDS; r++) {
      const p = await load(post, { concurrency: CONC, seconds: SECONDS });
      const g = await load(get, { concurrency: CONC, seconds: SECONDS });
      rounds.push({ post: p, get: g });
      console.error(
        `round ${r + 1}: post ${p.rps}/s p99 ${p.p99} ms (${p.errors} errors) | get ${g.rps}/s p99 ${g.p99} ms`,
      );
    }
    await pool.close();
    const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
    const postRps = mean(rounds.map((x) => x.post.rps));
    const getRps = mean(rounds.map((x) => x.get.rps));
    const ratio = Math.round((postRps / getRps) * 100) / 100;
    writeResult('platform-messages', {
      benchmark:
        'POST /v1/channels/{c}/messages (bot token, as the SDK sends it) vs GET …/apps/mine/{id}, 50 connections, alternating rounds, daemon in its own process, fsync on, platform rate limits off',
      machine: `${os.cpus().length} cores, Node ${process.version}`,
      meanRps: { post: postRps, get: getRps },
      ratio,
      ratioPerRound: rounds.map((x) => Math.round((x.post.rps / x.get.rps) * 100) / 100),
      rounds,
      target: 0.7,
      met: ratio >= 0.7,
      at: new Date().toISOString(),
    });
  } finally {
    await d.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
