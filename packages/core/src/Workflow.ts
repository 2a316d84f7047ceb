/**
 * Durable workflows: ordinary Effect code whose every model call, tool call, memoized step, clock read,
 * random number, sleep and human pause goes through the kernel and into the log. Re-running the code
 * over its log returns recorded results: a resumed run fast-forwards to where it stopped.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { type AssistantMessage, type ChatMessage, type ToolCall, type ToolMessage, type Usage, user } from "./Chat.js"
import type {
  ApprovalRejected,
  BudgetExceeded,
  InvalidToolArguments,
  MaxTurnsExceeded,
  ModelError,
  OutputDecodeError,
  PolicyDenied,
  ToolError,
  UnknownTool,
  WaitForSignalError
} from "./Errors.js"
import type { Json } from "./Json.js"
import type { TenantContext } from "./Tenant.js"
import type { Tool } from "./Tool.js"

/** Options of a chat: one model step, or a loop of model step -> tool steps until the model answers. */
export interface ChatOptions<A, I = unknown> {
  /** The conversation so far (a system message, earlier turns). */
  readonly messages?: ReadonlyArray<ChatMessage> | undefined
  /** The user's message, sent after `messages` (the seed's `kernel.chat(prompt=...)`). A chat needs one or both. */
  readonly prompt?: string | undefined
  /** Model name; the ModelPort's default when absent. */
  readonly model?: string | undefined
  /**
   * The tools the model may call, by name (from the `ToolRegistry`) or by value (a tool the registry does not
   * hold), filtered by the tenant's capabilities; default: all registered.
   */
  readonly tools?: ReadonlyArray<string | Tool> | undefined
  /** Decode the final answer (JSON) with this schema; the model is asked for its JSON Schema. */
  readonly outputSchema?: Schema.Schema<A, I> | undefined
  /** Model steps the loop may take before it fails with `MaxTurnsExceeded`. Default 10. */
  readonly maxTurns?: number | undefined
  /** Re-asks when the answer does not decode with `outputSchema`. Default 2. */
  readonly maxDecodeRetries?: number | undefined
  readonly maxOutputTokens?: number | undefined
}

/** The conversation a chat starts with: its `messages`, then its `prompt` as the user's message. */
export const conversation = (options: Pick<ChatOptions<unknown>, "messages" | "prompt">): ReadonlyArray<ChatMessage> =>
  options.prompt === undefined ? options.messages ?? [] : [...(options.messages ?? []), user(options.prompt)]

/** The outcome of a chat. */
export interface ChatResult<A> {
  /** The decoded answer (the answer's text when there is no output schema). */
  readonly output: A
  readonly message: AssistantMessage
  /** The whole conversation, including tool calls and results. */
  readonly messages: ReadonlyArray<ChatMessage>
  readonly usage: Usage
  readonly costUsd: number
}

/**
 * Options of one model step (`ctx.modelStep`): the request goes to the model as given, and the tool calls in its
 * answer come back without being run. For loops that rebuild their context before every model call (an agent
 * with compaction); `chat` is the same step in a loop.
 */
export interface ModelStepOptions<A, I = unknown> {
  readonly messages: ReadonlyArray<ChatMessage>
  /** Model name; the ModelPort's default when absent. */
  readonly model?: string | undefined
  /** As `ChatOptions.tools`: names or values, filtered by the tenant's capabilities; default: all registered. */
  readonly tools?: ReadonlyArray<string | Tool> | undefined
  /** The model is asked for this schema's JSON Schema, and `answer` is decoded with it. */
  readonly outputSchema?: Schema.Schema<A, I> | undefined
  readonly maxOutputTokens?: number | undefined
  /** Explicit step key (default `model:<index>`). */
  readonly key?: string | undefined
}

/** What one model step returned. */
export interface ModelStepResult<A> {
  readonly message: AssistantMessage
  /** The calls the model asked for, not run: answer each with `ctx.toolCall`. Empty when the model answered. */
  readonly toolCalls: ReadonlyArray<ToolCall>
  /**
   * When the model called no tool: its answer decoded with `outputSchema` (its text without one), or, on the
   * left, why it does not decode. `undefined` when the model called tools.
   */
  readonly answer: Either.Either<A, string> | undefined
  readonly usage: Usage
  readonly costUsd: number
}

/** Options of `ctx.toolCall`. */
export interface ToolCallOptions {
  /**
   * The tools offered in the model step that issued the call (names or values, as given to `modelStep`); a call
   * to any other tool is answered as an unknown tool and never runs. Default: all registered.
   */
  readonly tools?: ReadonlyArray<string | Tool> | undefined
  /** Explicit step key (default `tool:<index>`). */
  readonly key?: string | undefined
}

/** What a model-issued tool call came to. */
export interface ToolCallOutcome {
  /** The message that answers the call: its result, or `{"error": tag, "message": ...}` so the model can correct itself. */
  readonly message: ToolMessage
  /** The result as JSON, or why the call failed (unknown tool, denied, invalid arguments, the handler's error). */
  readonly result: Either.Either<Json, ToolCallError>
}

/** Errors one model step may fail with. */
export type ModelStepError = ModelError | PolicyDenied | BudgetExceeded

/** Errors a chat may fail with (a tool's failure is answered to the model, not raised). */
export type ChatError = ModelError | OutputDecodeError | MaxTurnsExceeded | PolicyDenied | BudgetExceeded

/** Errors a direct tool call may fail with. */
export type ToolCallError = ToolError | InvalidToolArguments | UnknownTool | PolicyDenied | ApprovalRejected

/** Options of `pauseForHuman`. */
export interface PauseOptions<A, I> {
  readonly reason: string
  /** The response the run waits for; a response that does not decode is refused and nothing is written. */
  readonly schema?: Schema.Schema<A, I> | undefined
  readonly key?: string | undefined
}

/** Options of `ctx.waitForSignal`. */
export interface WaitForSignalOptions {
  /**
   * How long to wait; the deadline (now + timeout) is logged when the wait starts, so a run resumed after a crash
   * waits only what is left. `0`: take a signal already sent, or time out at once. Default: no timeout.
   */
  readonly timeout?: Duration.DurationInput | undefined
  /** Explicit step key (default `signal:<index>`). */
  readonly key?: string | undefined
}

/**
 * What a workflow's code can do durably. Each call is one step of the log. `I` is the workflow's input, which
 * `continueAsNew` hands over.
 */
export interface WorkflowContext<I = unknown> {
  readonly runId: string
  readonly tenant: TenantContext
  /** Model step(s); see `ChatOptions`. */
  readonly chat: <A = string, I = unknown>(options: ChatOptions<A, I>) => Effect.Effect<ChatResult<A>, ChatError>
  /**
   * One model step: sends `messages` and returns the answer, its tool calls unrun (see `ModelStepOptions`). Logged
   * and replayed like a step of `chat`.
   */
  readonly modelStep: <A = string, I = unknown>(options: ModelStepOptions<A, I>) => Effect.Effect<ModelStepResult<A>, ModelStepError>
  /**
   * Runs a tool call a model step returned (name, JSON arguments, call id), as `chat` does: two-phase and
   * crash-safe, refused when the tool was not offered, the tenant lacks its capability or the arguments do not
   * decode. Never fails: a failure is the outcome's `result`, and its `message` tells the model.
   */
  readonly toolCall: (call: ToolCall, options?: ToolCallOptions) => Effect.Effect<ToolCallOutcome>
  /** Calls a tool (by value or by name) with arguments given by code. Two-phase, crash-safe. */
  readonly tool: <Args, Result>(
    tool: Tool<Args, Result> | string,
    args: Args,
    options?: { readonly key?: string | undefined }
  ) => Effect.Effect<Result, ToolCallError>
  /** Runs `effect` once and memoizes its value (encoded with `schema`); a replay returns the logged value. */
  readonly step: <A, I, E>(
    name: string,
    effect: Effect.Effect<A, E>,
    schema: Schema.Schema<A, I>,
    options?: { readonly key?: string | undefined }
  ) => Effect.Effect<A, E>
  /** Wall-clock milliseconds, logged. */
  readonly now: () => Effect.Effect<number>
  /** A random number in [0, 1), logged. */
  readonly random: () => Effect.Effect<number>
  /** A durable timer: a resumed run sleeps only what is left. */
  readonly sleep: (duration: Duration.DurationInput) => Effect.Effect<void>
  /** Ends this execution with a ticket; `resume(runId, { response })` continues from here. */
  readonly pauseForHuman: <A = unknown, AI = unknown>(options: PauseOptions<A, AI>) => Effect.Effect<A>
  /**
   * Takes the oldest signal named `name` sent to this run (`Kernel.signal`) and not taken yet, decoded with `schema`;
   * waits for one when none is there, until `options.timeout` (`SignalTimeout`). A signal sent before the code gets
   * here is not lost: it waits in the run's log. Logged, so a replay takes the same signal at the same point. A payload
   * that does not decode is `InvalidSignalPayload` (the signal is taken: the next wait takes the next one). The
   * execution waits in its process, reading the log for new signals (see the core README's "Signals").
   *
   * @example
   * const decision = yield* ctx.waitForSignal("decision", Schema.Struct({ approve: Schema.Boolean }), { timeout: "1 day" }).pipe(
   *   Effect.catchTag("SignalTimeout", () => Effect.succeed({ approve: false }))
   * )
   */
  readonly waitForSignal: <A, AI = unknown>(
    name: string,
    schema: Schema.Schema<A, AI>,
    options?: WaitForSignalOptions
  ) => Effect.Effect<A, WaitForSignalError>
  /**
   * Ends this run and continues the work as a new run of the same workflow and lineage, started with `input` (as
   * Temporal's and DBOS's continue-as-new): a run that would grow without end stays bounded. The run's last event
   * (`RunContinued`) and the new run's `RunStarted` are written in one transaction; the new run's id is derived from
   * this one (`Event.continuedRunId`), so a crash and a retry never start two. Tenant, parent, root (so the budget
   * spent so far counts) carry over; nothing else does: hand over what the next run needs in `input`. The caller of
   * `execute`/`resume` gets the result of the chain's last run, under its id. Never returns.
   *
   * @example
   * if (page.hasMore) return yield* ctx.continueAsNew({ cursor: page.next, total })
   */
  // A method, so a context typed by its workflow's input is still a `WorkflowContext` where helpers take one.
  continueAsNew(input: I): Effect.Effect<never>
  /**
   * How many events the run's log holds at this point of the code, logged as a step (a replay returns the logged
   * number): decide on it to `continueAsNew` before a run grows too long.
   */
  readonly historyLength: () => Effect.Effect<number>
  /**
   * Whether this run takes the new path of a change to the code (as Temporal's `patched`): true for a new run and for
   * a run that reaches this point after the change, false for a run replayed over a log that passed this point before
   * it. The first true is logged as a marker (a `StepCompleted` named `patched`, step key `patched:<changeId>`, outside
   * the positional step keys), so a replay answers the same; the answer holds for the rest of the execution. See the
   * core README's "Versioning" for the three phases (patched, deprecated, removed).
   *
   * @example
   * const greeting = (yield* ctx.patched("polite-greeting"))
   *   ? yield* ctx.step("greet", Effect.succeed("good day"), Schema.String)
   *   : yield* ctx.step("greet", Effect.succeed("hello"), Schema.String)
   */
  readonly patched: (changeId: string) => Effect.Effect<boolean>
  /**
   * The cleanup phase of a `patched(changeId)` (as Temporal's `deprecatePatch`): the code keeps only the new path, a
   * run with the marker replays, and a new run still logs it (so code still calling `patched` replays it on the new
   * path). Deploy it once no run that took the old path can be replayed or resumed; remove it once no run of the
   * `patched` code is in flight (a marker nothing asks for is skipped by a replay).
   */
  readonly deprecatePatch: (changeId: string) => Effect.Effect<void>
}

/** A workflow definition. Its input and output cross the log, so both are given as schemas. */
export interface Workflow<I, O, E> {
  readonly name: string
  /**
   * The version of the code: a run records the version that started it (`RunStarted.version`, the runs row), and a
   * worker continues only runs of the versions it has (`Worker.run({ versions })`). See the core README's "Versioning".
   */
  readonly version: string
  run(input: I, context: WorkflowContext<I>): Effect.Effect<O, E>
  decodeInput(input: unknown): Either.Either<I, ParseResult.ParseError>
  encodeInput(input: I): Either.Either<unknown, ParseResult.ParseError>
  decodeOutput(output: unknown): Either.Either<O, ParseResult.ParseError>
  encodeOutput(output: O): Either.Either<unknown, ParseResult.ParseError>
  /** The error as `RunFailed` logs it, with the workflow's `error` schema (a left without one). */
  encodeError(error: E): Either.Either<unknown, ParseResult.ParseError>
  /** A logged error back as the workflow's typed error (a left without an `error` schema). */
  decodeError(error: unknown): Either.Either<E, ParseResult.ParseError>
}

/** A workflow of any type, as a registry holds it. */
export type Any = Workflow<unknown, unknown, unknown>

/**
 * Defines a workflow. `error`, as `@effect/workflow`'s `Workflow.make({ error })`, declares what the run may fail with:
 * `RunFailed` then logs the error encoded, and resuming or replaying the failed run (in any process) fails with the
 * same typed error, not a `RunFailedError`. Without it, a failure is logged by its tag and message only.
 *
 * @example
 * const approve = Workflow.make({
 *   name: "approve",
 *   input: Schema.Struct({ amount: Schema.Number }),
 *   output: Schema.String,
 *   run: ({ amount }, ctx) => Effect.gen(function*() {
 *     if (amount > 100) yield* ctx.pauseForHuman({ reason: "large amount" })
 *     return "approved"
 *   })
 * })
 *
 * @example
 * class Declined extends Schema.TaggedError<Declined>()("Declined", { reason: Schema.String }) {}
 * const pay = Workflow.make({
 *   name: "pay",
 *   input: Schema.Number,
 *   output: Schema.String,
 *   error: Declined,
 *   run: (amount) => amount > 100 ? Effect.fail(new Declined({ reason: "too much" })) : Effect.succeed("paid")
 * })
 */
export const make = <I, II, O, OI, E, EI = never>(options: {
  readonly name: string
  /**
   * The version of the code (any text: `"2"`, a date, a build id). Default `DEFAULT_VERSION` (`"1"`), which is also
   * the version of runs started before versions were recorded. Raise it for a change old runs cannot replay, and let
   * workers of the old version finish them; a change guarded by `ctx.patched` keeps the version.
   */
  readonly version?: string | undefined
  readonly input: Schema.Schema<I, II>
  readonly output: Schema.Schema<O, OI>
  /** What the run may fail with, logged encoded (see above). */
  readonly error?: Schema.Schema<E, EI> | undefined
  readonly run: (input: I, context: WorkflowContext<I>) => Effect.Effect<O, E>
}): Workflow<I, O, E> => ({
  name: options.name,
  version: options.version ?? DEFAULT_VERSION,
  run: options.run,
  decodeInput: Schema.decodeUnknownEither(options.input),
  encodeInput: Schema.encodeEither(options.input),
  decodeOutput: Schema.decodeUnknownEither(options.output),
  encodeOutput: Schema.encodeEither(options.output),
  encodeError: options.error === undefined ? Schema.encodeUnknownEither(Schema.Never) : Schema.encodeEither(options.error),
  decodeError: options.error === undefined ? Schema.decodeUnknownEither(Schema.Never) : Schema.decodeUnknownEither(options.error)
})

/** The version of a workflow that declares none, and of runs whose `RunStarted` records none (started before versions). */
export const DEFAULT_VERSION = "1"
