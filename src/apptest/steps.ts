/**
 * A suite file's shape as TypeScript types, one per definition of schemas/test-suite.schema.json:
 * the suite, its app, and each kind of step (an action by its one key, an expectation by `expect`).
 * suite.ts checks a file against the schema and only then reads it as these types, so each type
 * says what the schema makes true; change the two together. `Resolved<T>` is a step once its
 * references are resolved (refs.ts): a string written may then be whatever the reference named.
 */

interface Named {
  /** A label for the step in the report. */
  name?: string;
  /** Keep the step's result under this name. */
  save?: string;
}
/** An action a user does: owner, unless `as` names another. */
interface ByUser extends Named {
  as?: string;
}

export interface SayStep extends ByUser {
  say: string;
  channel?: string;
  thread?: string;
}
export interface ClickStep extends ByUser {
  click: string | { onAction: string };
  message?: string;
  modal?: true;
  /** An element of the app's home view for the user (named by onAction: the run does not see the view). */
  home?: true;
  value?: string;
}
export interface SelectStep extends ByUser {
  select: string | string[];
  in?: string;
  query?: string;
  message?: string;
  modal?: true;
  home?: true;
}
/** A date picked (YYYY-MM-DD), or a range's first and last day. */
export interface DateStep extends ByUser {
  date: string | [string, string];
  in?: string;
  message?: string;
  modal?: true;
  home?: true;
}
/** A text typed in a text input and sent (PLAIN_TEXT_INPUT). */
export interface EnterStep extends ByUser {
  enter: string;
  in?: string;
  message?: string;
  modal?: true;
  home?: true;
}
export interface SubmitStep extends ByUser {
  submit: Record<string, string | string[]>;
  modal?: string;
}
export interface CloseStep extends ByUser {
  close: true | string;
}
export interface ShortcutStep extends ByUser {
  shortcut: string;
  message?: string;
}
export interface MenuStep extends ByUser {
  menu: string;
  query?: string;
  message?: string;
}
export interface EventStep extends Named {
  event: string;
  body?: Record<string, unknown>;
}
export interface ReactStep extends ByUser {
  react: string;
  message?: string;
}
export type ActionStep =
  | SayStep
  | ClickStep
  | SelectStep
  | DateStep
  | EnterStep
  | SubmitStep
  | CloseStep
  | ShortcutStep
  | MenuStep
  | EventStep
  | ReactStep;

/** An expectation: `expect` says which, `within` its time budget in milliseconds. */
interface Expecting<K extends string> extends Named {
  expect: K;
  within?: number;
}
/** What a message expectation looks for. */
interface MessageShape {
  text?: string;
  buttons?: string | string[];
}
interface PostedStep<K extends string> extends Expecting<K>, MessageShape {
  thread?: boolean | string;
  ephemeralTo?: string;
  from?: string;
  channel?: string;
}
export interface AnswerStep<K extends 'answered' | 'ack' | 'nack'> extends Expecting<K> {
  text?: string;
}
export interface ModalStep extends Expecting<'modal'> {
  title?: string;
  inputs?: string[];
  callbackId?: string;
}
export type MessageStep = PostedStep<'message'>;
export type NoMessageStep = PostedStep<'no-message'>;
export interface UpdatedStep extends Expecting<'updated'>, MessageShape {
  message?: string;
}
export interface DeletedStep extends Expecting<'deleted'> {
  message?: string;
}
export interface OptionsStep extends Expecting<'options'> {
  options?: string[];
  includes?: string[];
}
export interface ReactionStep extends Expecting<'reaction'> {
  code?: string;
  message?: string;
  from?: string;
}
export interface EventExpectStep extends Expecting<'event'> {
  type: string;
}
type NoFailedStep = Expecting<'no-failed-deliveries'>;
export interface SignatureStep extends Expecting<'signature-check'> {
  /** The kind of call to probe: one of the delivery kinds the schema lists (slash-command, event, …). */
  kind?: string;
}
export type ExpectStep =
  | AnswerStep<'answered'>
  | AnswerStep<'ack'>
  | AnswerStep<'nack'>
  | ModalStep
  | MessageStep
  | NoMessageStep
  | UpdatedStep
  | DeletedStep
  | OptionsStep
  | ReactionStep
  | EventExpectStep
  | NoFailedStep
  | SignatureStep;

/** One step as written. */
export type Step = ActionStep | ExpectStep;

/**
 * A value once its references are resolved: a string as written may now be any value (`${saved}`
 * alone is the saved object itself); a constant of the schema (`expect: ack`, `modal: true`) holds
 * no reference and stays as it is.
 */
export type Resolved<T> = T extends string
  ? string extends T
    ? unknown
    : T
  : T extends ReadonlyArray<infer U>
    ? Array<Resolved<U>>
    : T extends object
      ? { [K in keyof T]: Resolved<T[K]> }
      : T;

export interface ReadySpec {
  output?: string;
  url?: string;
  status?: number;
  timeoutMs?: number;
}
interface StartSpec {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  port?: number;
  ready?: ReadySpec;
  stopTimeoutMs?: number;
}
export interface AppSpec {
  manifest?: string | { fromUrl: string };
  start?: StartSpec;
  url?: string;
  id?: string;
}
export interface InstallSpec {
  users?: string[];
  botScopes?: string[];
  userScopes?: string[];
}
interface TestFile {
  name: string;
  steps: Step[];
  within?: number;
  skip?: boolean | string;
}

/** A suite file as written, once it conforms to the schema. */
export interface SuiteFile {
  $schema?: string;
  name?: string;
  app: AppSpec;
  users?: Record<string, { name?: string }>;
  /** Channels the tests use besides their own, by name. */
  channels?: string[];
  install?: false | InstallSpec;
  defaults?: { within?: number };
  tests: TestFile[];
}
