/**
 * A suite file (docs/testing.md): read as JSON (.json) or YAML (.yaml, .yml), checked against
 * schemas/test-suite.schema.json and the rules a schema cannot say (names used before they are
 * saved, users that are not declared, unique test names, valid patterns), every problem at once
 * with its JSON pointer and its line in the file. The app's manifest file is read and validated
 * here too, so a bad suite stops before anything starts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { isMap, isNode, isSeq, isScalar, type Document, type LineCounter, type Node } from 'yaml';
import { describeSchemaErrors, type Violation } from '../validation/schema-errors.js';
import { didYouMean } from '../validation/did-you-mean.js';
import type { Manifest } from '../validation/manifest.js';
import { BUILTINS, RefError, refsIn, stringsIn } from './refs.js';
import { patternError } from './match.js';
import {
  InputRefused,
  InputUnreadable,
  insideFolder,
  parseJson,
  parseYaml,
  readBounded,
  SUITE_LIMITS,
  yamlData,
  type InputOptions,
} from './suite-input.js';
import { must } from '../must.js';
import { isRecord, recordOr, fieldsOf as obj, itemsOf as arr } from '../unknown-values.js';
import type { AppSpec, InstallSpec, Step, SuiteFile } from './steps.js';

export const SUITE_SCHEMA_ID = 'https://appreg.dev/schemas/test-suite.schema.json';
const schemaFile = new URL('../../../schemas/test-suite.schema.json', import.meta.url);
const suiteSchema = must(recordOr(JSON.parse(fs.readFileSync(schemaFile, 'utf8'))), 'the suite schema');

/** The actions a step may be (one each); an expectation is `expect: <kind>`. */
const ACTIONS = [
  'say',
  'click',
  'select',
  'date',
  'enter',
  'submit',
  'close',
  'shortcut',
  'menu',
  'event',
  'react',
] as const;
const EXPECTATIONS = [
  'answered',
  'ack',
  'nack',
  'modal',
  'message',
  'no-message',
  'updated',
  'deleted',
  'options',
  'reaction',
  'event',
  'no-failed-deliveries',
  'signature-check',
] as const;

/** A test of the suite, with where it is. */
export interface TestSpec {
  name: string;
  steps: Step[];
  within?: number;
  skip?: boolean | string;
  pointer: string;
}
/** Who authorizes the app (owner unless the suite says), with which scopes. */
type Install = InstallSpec & { users: string[] };

export interface Suite {
  file: string;
  dir: string;
  name: string;
  app: AppSpec;
  /** The manifest file's content (an app the runner starts). */
  manifest?: Manifest;
  manifestFile?: string;
  users: Record<string, { name?: string }>;
  /** Channels the tests use besides their own, by name: made for the run unless there. */
  channels: string[];
  install: Install | false;
  defaults: { within?: number };
  tests: TestSpec[];
  /** `file:line:column` of a JSON pointer of the suite, as near as the file tells. */
  where(pointer: string): string;
}

/** A suite file that cannot be used: every problem, each at its place. */
export class SuiteInvalid extends Error {
  constructor(
    public readonly file: string,
    public readonly problems: Array<Violation & { at: string }>,
  ) {
    super(
      `${file}: ${problems.length === 1 ? 'a problem' : `${problems.length} problems`}:\n${problems.map((p) => `  ${p.at} ${p.pointer || '/'}: ${p.message}`).join('\n')}`,
    );
  }
}

/** A suite file that cannot be read at all (exit 2, as an unreadable file is for every command). */
export class SuiteUnreadable extends Error {}

let compiled: { whole: ValidateFunction; part(def: string): ValidateFunction } | undefined;
function validators() {
  if (compiled) return compiled;
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  ajv.addSchema(suiteSchema);
  const parts = new Map<string, ValidateFunction>();
  compiled = {
    whole: must(ajv.getSchema(SUITE_SCHEMA_ID)),
    part(def) {
      let v = parts.get(def);
      if (!v) parts.set(def, (v = must(ajv.getSchema(`${SUITE_SCHEMA_ID}#/$defs/${def}`))));
      return v;
    },
  };
  return compiled;
}

type Loose = Record<string, unknown>;

/** Where each JSON pointer of a parsed document is: line and column. */
function locator(
  doc: Document,
  lineCounter: LineCounter,
): (pointer: string) => { line: number; col: number } | undefined {
  return (pointer) => {
    let node: unknown = doc.contents;
    let last: Node | undefined = doc.contents ?? undefined;
    const segs = pointer.split('/').slice(1);
    for (const [i, raw] of segs.entries()) {
      const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === seg);
        if (!pair) break;
        node = pair.value;
        // a field is shown at its name; what is inside it, at its value
        const at = (i === segs.length - 1 ? pair.key : pair.value) ?? pair.key;
        last = isNode(at) ? at : undefined;
      } else if (isSeq(node)) {
        const item = node.items[Number(seg)];
        if (!item) break;
        node = item;
        last = isNode(item) ? item : undefined;
      } else break;
    }
    const offset = last?.range?.[0];
    return offset === undefined ? undefined : lineCounter.linePos(offset);
  };
}

const refusedAll = (file: string, refused: InputRefused[]) =>
  new SuiteInvalid(
    file,
    refused.map((r) => ({ at: r.at, pointer: '', message: r.message })),
  );

/**
 * Parse the text of a suite file (JSON for .json, YAML otherwise: YAML 1.2 holds JSON too) within
 * the limits of suite-input.ts, and where each of its JSON pointers is.
 */
function parse(file: string, text: string): { input: unknown; locate: ReturnType<typeof locator> } {
  const json = file.toLowerCase().endsWith('.json');
  let input: unknown;
  try {
    if (json) input = parseJson(file, text, '', SUITE_LIMITS.maxDepth);
  } catch (e) {
    if (e instanceof InputRefused) throw refusedAll(file, [e]);
    throw e;
  }
  const parsed = parseYaml(file, text, SUITE_LIMITS.maxDepth, { uniqueKeys: !json });
  if ('refused' in parsed) {
    // JSON.parse took it: the YAML reading is only for places
    if (json) return { input, locate: () => undefined };
    throw refusedAll(file, parsed.refused);
  }
  const locate = locator(parsed.doc, parsed.lineCounter);
  if (json) return { input, locate };
  try {
    return { input: yamlData(file, parsed.doc), locate };
  } catch (e) {
    if (e instanceof InputRefused) throw refusedAll(file, [e]);
    throw e;
  }
}

/** The verb of a step: its one action key, or `expect`. */
function verbOf(step: Loose): { verb?: string; problem?: string } {
  const verbs = [...ACTIONS, 'expect'].filter((k) => k in step);
  if (verbs.length === 1) return { verb: verbs[0] };
  if (verbs.length > 1) return { problem: `has ${verbs.join(' and ')}: a step does one thing (split it in two steps)` };
  const keys = Object.keys(step);
  const near = keys.map((k) => didYouMean(k, [...ACTIONS, 'expect'])).find(Boolean) ?? '';
  return { problem: `needs one of ${[...ACTIONS, 'expect'].join(', ')}${near}` };
}

/** A check of Ajv's as what it proves: a value it passes has the type declared for its schema (steps.ts). */
const conforms = <T>(check: ValidateFunction, value: unknown): value is T => check(value) === true;

/**
 * The schema's errors, with steps and the install checked by their own definitions (clearer than oneOf's); and the
 * suite as its type when the whole of it conforms.
 */
function schemaProblems(input: unknown): { problems: Violation[]; suite?: SuiteFile } {
  const v = validators();
  const stepPath = /^\/tests\/\d+\/steps\/\d+(\/|$)/;
  const out: Violation[] = [];
  let suite: SuiteFile | undefined;
  if (conforms<SuiteFile>(v.whole, input)) suite = input;
  else {
    const kept = (v.whole.errors ?? []).filter(
      (e) =>
        !stepPath.test(e.instancePath) && !(e.instancePath === '/install' || e.instancePath.startsWith('/install/')),
    );
    out.push(...describeSchemaErrors(kept, suiteSchema, input));
  }
  const m = obj(input);
  if (m.install !== undefined && m.install !== false) {
    if (typeof m.install !== 'object' || m.install === null || Array.isArray(m.install))
      out.push({
        pointer: '/install',
        message: 'must be false (nobody authorizes the app) or an object {users, botScopes, userScopes}',
      });
    else if (!v.part('install')(m.install))
      out.push(
        ...rebase(describeSchemaErrors(v.part('install').errors ?? [], defOf('install'), m.install), '/install'),
      );
  }
  arr(m.tests).forEach((test, ti) => {
    arr(obj(test).steps).forEach((step, si) => {
      const at = `/tests/${ti}/steps/${si}`;
      if (!isRecord(step))
        return void out.push({ pointer: at, message: 'must be an object: one action (say, click, …) or expect' });
      const { verb, problem } = verbOf(step);
      if (!verb) return void out.push({ pointer: at, message: must(problem) });
      let def = `${verb}Step`;
      if (verb === 'expect') {
        const kind = step.expect;
        if (typeof kind !== 'string' || !EXPECTATIONS.some((e) => e === kind)) {
          return void out.push({
            pointer: `${at}/expect`,
            message: `must be one of ${EXPECTATIONS.join(', ')}${didYouMean(kind, EXPECTATIONS)}`,
          });
        }
        def = `expect-${kind}`;
      }
      const check = v.part(def);
      if (!check(step)) out.push(...rebase(tidy(describeSchemaErrors(check.errors ?? [], defOf(def), step)), at));
    });
  });
  return { problems: out, suite };
}

/** A definition of the schema: what the errors of its own validator are relative to. */
const defOf = (def: string) => must(recordOr(recordOr(suiteSchema.$defs)?.[def]), `the schema's ${def}`);
const rebase = (list: Violation[], base: string) => list.map((x) => ({ ...x, pointer: base + x.pointer }));

/**
 * Several "must be X" at one place (the branches of a oneOf) said once; oneOf's own line dropped where others speak.
 */
function tidy(list: Violation[]): Violation[] {
  const byPointer = new Map<string, Violation[]>();
  for (const x of list) byPointer.set(x.pointer, [...(byPointer.get(x.pointer) ?? []), x]);
  const out: Violation[] = [];
  for (const [pointer, here] of byPointer) {
    const types = here.filter(
      (x) => /^must be (string|object|array|boolean|integer|number)/.test(x.message) && !x.message.includes(' one of '),
    );
    const rest = here.filter((x) => !types.includes(x) && x.message !== 'must match exactly one schema in oneOf');
    const deeper = list.some((x) => x.pointer.startsWith(pointer + '/'));
    if (types.length > 1)
      out.push({ pointer, message: `must be ${types.map((x) => x.message.replace(/^must be /, '')).join(' or ')}` });
    else out.push(...types);
    out.push(...rest);
    if (!types.length && !rest.length && !deeper)
      out.push({ pointer, message: 'does not have a shape this field takes (see schemas/test-suite.schema.json)' });
  }
  return out;
}

/** The fields of a step that name a user, and where user names are declared. */
const USER_FIELDS = ['as', 'ephemeralTo', 'from'];
const PATTERN_FIELDS = ['text', 'title', 'buttons', 'inputs', 'options', 'includes'];

/** Rules beyond the schema, on whatever parts are well-formed. */
function ruleProblems(m: Loose): Violation[] {
  const out: Violation[] = [];
  const users = obj(m.users);
  const known = new Set(['owner', ...Object.keys(users)]);
  const checkUser = (name: unknown, pointer: string, allowApp = false) => {
    if (typeof name !== 'string' || known.has(name) || (allowApp && name === 'app')) return;
    out.push({
      pointer,
      message: `is not a user of this suite: owner${Object.keys(users).length ? `, ${Object.keys(users).join(', ')}` : ''}, or one declared under users${didYouMean(name, known)}`,
    });
  };
  arr(obj(m.install).users).forEach((u, i) => checkUser(u, `/install/users/${i}`));

  const checkRefs = (value: unknown, base: string, saved: Set<string> | undefined) => {
    for (const [text, pointer] of stringsIn(value, base)) {
      let refs;
      try {
        refs = refsIn(text);
      } catch (e) {
        if (e instanceof RefError) out.push({ pointer, message: e.message });
        continue;
      }
      for (const r of refs) {
        const builtin = BUILTINS[r.root];
        if (builtin) {
          if (!saved && r.root === 'test')
            out.push({ pointer, message: `\${${r.expr}}: there is no test here (only in steps)` });
          else if (builtin !== 'any' && r.path[0] !== undefined && !builtin.includes(r.path[0]))
            out.push({
              pointer,
              message: `\${${r.expr}}: ${r.root} has ${builtin.join(', ')}${didYouMean(r.path[0], builtin)}`,
            });
          else if (r.root === 'users' && r.path[0] !== undefined && !known.has(r.path[0]))
            out.push({ pointer, message: `\${${r.expr}}: no user ${r.path[0]} (owner, or one declared under users)` });
          else if ((r.root === 'env' || r.root === 'users') && r.path.length === 0)
            out.push({
              pointer,
              message: `\${${r.expr}}: name what of ${r.root}, e.g. \${${r.root === 'env' ? 'env.HOME' : 'users.owner.id'}}`,
            });
          continue;
        }
        if (!saved)
          out.push({ pointer, message: `\${${r.expr}}: here only env, run, daemon, app and users are known` });
        else if (!saved.has(r.root))
          out.push({
            pointer,
            message: `\${${r.expr}}: no earlier step of this test saves ${r.root}${saved.size ? ` (saved before this step: ${[...saved].join(', ')})` : ''}${didYouMean(r.root, saved)}`,
          });
      }
    }
  };
  checkRefs(m.app, '/app', undefined);

  const names = new Map<string, number>();
  arr(m.tests).forEach((test, ti) => {
    const t = obj(test);
    if (typeof t.name === 'string') {
      const first = names.get(t.name);
      if (first !== undefined)
        out.push({
          pointer: `/tests/${ti}/name`,
          message: `must be unique in the suite (test ${first} is also named ${JSON.stringify(t.name)})`,
        });
      else names.set(t.name, ti);
    }
    const saved = new Set<string>();
    arr(t.steps).forEach((raw, si) => {
      const s = obj(raw);
      const at = `/tests/${ti}/steps/${si}`;
      checkRefs(s, at, saved);
      for (const f of USER_FIELDS) if (f in s) checkUser(s[f], `${at}/${f}`, f === 'from');
      for (const f of PATTERN_FIELDS) {
        for (const [text, pointer] of stringsIn(s[f], `${at}/${f}`)) {
          const why = patternError(text);
          if (why) out.push({ pointer, message: why });
        }
      }
      const click = s.click ?? s.select ?? s.date ?? s.enter;
      if (click !== undefined && s.modal === true && s.message !== undefined)
        out.push({
          pointer: `${at}/message`,
          message: 'is for a message: with modal: true the element is in the open modal',
        });
      if (click !== undefined && s.home === true) {
        if (s.modal === true || s.message !== undefined)
          out.push({
            pointer: `${at}/home`,
            message: `is the home view: it is not in ${s.modal === true ? 'a modal' : 'a message'} (give one of them)`,
          });
        // the run cannot read the home view: the element is named by its onAction
        if (s.click !== undefined && typeof s.click === 'string')
          out.push({ pointer: `${at}/click`, message: 'in the home view, name the button {onAction: …}' });
        if (s.click === undefined && typeof s.in !== 'string')
          out.push({ pointer: at, message: 'in the home view, name the element with in (its onAction)' });
      }
      if (typeof s.save === 'string') {
        if (saved.has(s.save))
          out.push({
            pointer: `${at}/save`,
            message: `${s.save} is already saved by an earlier step of this test: choose another name`,
          });
        saved.add(s.save);
      }
    });
  });

  const app = obj(m.app);
  const manifest = app.manifest;
  if (app.start !== undefined && app.url !== undefined)
    out.push({
      pointer: '/app/url',
      message:
        'is for an app already running: with start, the runner starts the app itself (give one of start and url)',
    });
  else if (app.start === undefined && app.url === undefined)
    out.push({
      pointer: '/app',
      message: 'needs start (with manifest: the runner starts the app) or url and id (an app already running)',
    });
  if (app.start !== undefined && typeof manifest !== 'string') {
    out.push({
      pointer: '/app/manifest',
      message:
        manifest === undefined
          ? 'is required with start: the manifest file the app is registered from'
          : 'must be a file with start: an app must be registered before it starts, so it cannot serve its manifest first (fromUrl is for an app already running)',
    });
  }
  if (app.url !== undefined) {
    if (app.id === undefined)
      out.push({
        pointer: '/app/id',
        message:
          'is required with url: the registration the running app uses (its id and secrets are its own), e.g. ${env.PUMBLE_APP_ID}',
      });
    if (typeof manifest === 'string')
      out.push({
        pointer: '/app/manifest',
        message:
          'cannot be a file for an app already running: its registration is its own (manifest: {fromUrl} updates it from the app)',
      });
  }
  return out;
}

/**
 * Read, parse and check a suite file; SuiteInvalid lists every problem (exit 7), SuiteUnreadable says why not (exit 2).
 */
export async function loadSuite(file: string, opts: InputOptions = {}): Promise<Suite> {
  const maxBytes = opts.maxBytes ?? SUITE_LIMITS.maxBytes;
  let text: string;
  try {
    text = readBounded(file, maxBytes, 'the suite file');
  } catch (e) {
    if (e instanceof InputUnreadable) throw new SuiteUnreadable(`cannot read ${file}: ${e.message}`);
    if (e instanceof InputRefused) throw refusedAll(file, [e]);
    throw e;
  }
  const { input, locate } = parse(file, text);
  const where = (pointer: string) => {
    const pos = locate(pointer);
    return pos ? `${file}:${pos.line}:${pos.col}` : `${file}:`;
  };
  if (!isRecord(input))
    throw new SuiteInvalid(file, [{ at: `${file}:`, pointer: '', message: 'must be an object with app and tests' }]);
  const checked = schemaProblems(input);
  const problems = [...checked.problems, ...ruleProblems(input)];
  const dir = path.dirname(file);
  // the manifest and the folder are checked on whatever parts are well-formed, as the rules are
  const app = obj(input.app);
  const start = obj(app.start);
  let manifest: Manifest | undefined;
  let manifestFile: string | undefined;
  if (app.start && typeof app.manifest === 'string') {
    const r = await readManifest(dir, app.manifest, maxBytes, opts.allowOutside === true);
    if ('problem' in r) problems.push({ pointer: '/app/manifest', message: r.problem });
    else ({ manifest, file: manifestFile } = r);
  }
  if (typeof start.cwd === 'string') {
    const cwd = insideFolder(dir, start.cwd, opts.allowOutside === true);
    if ('problem' in cwd) problems.push({ pointer: '/app/start/cwd', message: cwd.problem });
  }
  // (the schema's own verdict and its problems agree: a suite it refuses has at least one)
  if (!checked.suite && !problems.length)
    problems.push({ pointer: '', message: 'does not have the shape of schemas/test-suite.schema.json' });
  if (problems.length || !checked.suite)
    throw new SuiteInvalid(
      file,
      problems.map((p) => ({ ...p, at: where(p.pointer) })),
    );
  const m = checked.suite;
  const tests = m.tests.map((t, i): TestSpec => ({
    name: t.name,
    steps: t.steps,
    within: t.within,
    skip: t.skip,
    pointer: `/tests/${i}`,
  }));
  const install = m.install === false ? false : { users: ['owner'], ...m.install };
  return {
    file,
    dir,
    name:
      typeof m.name === 'string'
        ? m.name
        : path
            .basename(file)
            .replace(/\.apptest\.(json|ya?ml)$/i, '')
            .replace(/\.(json|ya?ml)$/i, ''),
    app: m.app,
    manifest,
    manifestFile,
    users: m.users ?? {},
    channels: m.channels ?? [],
    install,
    defaults: m.defaults ?? {},
    tests,
    where,
  };
}

/**
 * The manifest file of an app the runner starts (inside the suite's folder, within the size limit),
 * validated as `apps validate` does; a problem never quotes the file.
 */
async function readManifest(
  dir: string,
  given: string,
  maxBytes: number,
  allowOutside: boolean,
): Promise<{ manifest: Manifest; file: string } | { problem: string }> {
  const inside = insideFolder(dir, given, allowOutside);
  if ('problem' in inside) return inside;
  const file = inside.path;
  const what = `the manifest ${file}`;
  let raw: unknown;
  try {
    raw = parseJson(file, readBounded(file, maxBytes, what), what, SUITE_LIMITS.maxDepth);
  } catch (e) {
    if (e instanceof InputUnreadable) return { problem: `cannot read the manifest ${file}: ${e.message}` };
    if (e instanceof InputRefused) return { problem: e.at.endsWith(':') ? e.message : `${e.message} (${e.at})` };
    throw e;
  }
  const { validateManifest } = await import('../validation/manifest.js');
  const r = validateManifest(raw);
  if (!r.ok)
    return {
      problem: `the manifest ${file} is invalid: ${r.violations.map((v) => `${v.pointer || '/'} ${v.message}`).join('; ')}`,
    };
  return { manifest: r.manifest, file };
}
