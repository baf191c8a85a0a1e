/**
 * The check every test app runs on the events it receives: the delivery against
 * schemas/events/envelope.schema.json, its `body` (a JSON string) against
 * schemas/events/<eventType>.schema.json. A test app (receiver.ts, sdk-socket-client.ts) keeps what
 * failed and fails the test with it, so no event the daemon sends in the suite, real or made up by
 * deliver-test, can stray from the shape the official SDK declares unnoticed.
 */
import fs from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { must } from '../../src/must.js';

const dir = new URL('../../../schemas/events/', import.meta.url);
const BASE = 'https://appreg.dev/schemas/events/';

const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
for (const f of fs.readdirSync(dir))
  if (f.endsWith('.schema.json')) ajv.addSchema(JSON.parse(fs.readFileSync(new URL(f, dir), 'utf8')));

const schemaOf = (name: string): ValidateFunction | undefined => ajv.getSchema(`${BASE}${name}.schema.json`);

// compiled at once: a schema strict mode refuses fails every test that loads this, not the first event of one
for (const f of fs.readdirSync(dir)) schemaOf(f.replace(/\.schema\.json$/, ''));

/** The event types that have a schema (every file but the shared parts and the envelope). */
export const EVENT_TYPES: readonly string[] = fs
  .readdirSync(dir)
  .map((f) => f.replace(/\.schema\.json$/, ''))
  .filter((n) => /^[A-Z_]+$/.test(n))
  .sort();

const said = (v: ValidateFunction) =>
  (v.errors ?? []).map(
    (e) =>
      `${e.instancePath || '/'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}${e.params && 'unevaluatedProperty' in e.params ? ` (${String(e.params.unevaluatedProperty)})` : ''}`,
  );

/** True for what an app receives when it is an event (`messageType` PUMBLE_EVENT or APP_EVENT). */
const isEventDelivery = (p: unknown): p is Record<string, unknown> =>
  !!p &&
  typeof p === 'object' &&
  ['PUMBLE_EVENT', 'APP_EVENT'].includes((p as { messageType?: unknown }).messageType as string);

/** What is wrong with an event delivery `p` (its envelope, then its body), in one line each; [] when nothing is. */
export function eventProblems(p: Record<string, unknown>): string[] {
  const envelope = must(schemaOf('envelope'));
  if (!envelope(p)) return said(envelope).map((m) => `envelope ${m}`);
  const type = String(p.eventType);
  const check = schemaOf(type);
  if (!check) return [`no schema for ${type}`];
  let body: unknown;
  try {
    body = JSON.parse(String(p.body));
  } catch {
    return [`${type} body is not JSON`];
  }
  return check(body) ? [] : said(check).map((m) => `${type} body ${m}`);
}

/** The body of event `type` checked alone (a test's own look at a body): its problems, [] when none. */
export function bodyProblems(type: string, body: unknown): string[] {
  const check = schemaOf(type);
  if (!check) return [`no schema for ${type}`];
  return check(body) ? [] : said(check).map((m) => `${type} body ${m}`);
}

/**
 * What a test app keeps of the events it received that failed their schema, and the error a test fails with when
 * there are any.
 */
export function eventChecker() {
  const failed: string[] = [];
  return {
    failed,
    see(p: unknown): void {
      if (!isEventDelivery(p)) return;
      const problems = eventProblems(p);
      if (problems.length) failed.push(`${String(p.eventType)}: ${problems.join('; ')} in ${String(p.body)}`);
    },
    /** Throws when an event received so far did not match its schema. */
    assert(): void {
      if (failed.length)
        throw new Error(`the daemon sent event bodies that do not match schemas/events/:\n${failed.join('\n')}`);
    },
  };
}
