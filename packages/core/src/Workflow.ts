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
import type { AssistantMessage, ChatMessage, Usage } from "./Chat.js"
import type {
  BudgetExceeded,
  InvalidToolArguments,
  MaxTurnsExceeded,
  ModelError,
  OutputDecodeError,
  PolicyDenied,
  ToolError,
  UnknownTool
} from "./Errors.js"
import type { TenantContext } from "./Tenant.js"
import type { Tool } from "./Tool.js"

/** Options of a chat: one model step, or a loop of model step -> tool steps until the model answers. */
export interface ChatOptions<A, I = unknown> {
  readonly messages: ReadonlyArray<ChatMessage>
  /** Model name; the ModelPort's default when absent. */
  readonly model?: string | undefined
  /** Names of the tools the model may call (filtered by the tenant's capabilities); default: all registered. */
  readonly tools?: ReadonlyArray<string> | undefined
  /** Decode the final answer (JSON) with this schema; the model is asked for its JSON Schema. */
  readonly outputSchema?: Schema.Schema<A, I> | undefined
  /** Model steps the loop may take before it fails with `MaxTurnsExceeded`. Default 10. */
  readonly maxTurns?: number | undefined
  /** Re-asks when the answer does not decode with `outputSchema`. Default 2. */
  readonly maxDecodeRetries?: number | undefined
  readonly maxOutputTokens?: number | undefined
}

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

/** Errors a chat may fail with (a tool's failure is answered to the model, not raised). */
export type ChatError = ModelError | OutputDecodeError | MaxTurnsExceeded | PolicyDenied | BudgetExceeded

/** Errors a direct tool call may fail with. */
export type ToolCallError = ToolError | InvalidToolArguments | UnknownTool | PolicyDenied

/** Options of `pauseForHuman`. */
export interface PauseOptions<A, I> {
  readonly reason: string
  /** The response the run waits for; a response that does not decode is refused and nothing is written. */
  readonly schema?: Schema.Schema<A, I> | undefined
  readonly key?: string | undefined
}

/** What a workflow's code can do durably. Each call is one step of the log. */
export interface WorkflowContext {
  readonly runId: string
  readonly tenant: TenantContext
  /** Model step(s); see `ChatOptions`. */
  readonly chat: <A = string, I = unknown>(options: ChatOptions<A, I>) => Effect.Effect<ChatResult<A>, ChatError>
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
  readonly pauseForHuman: <A = unknown, I = unknown>(options: PauseOptions<A, I>) => Effect.Effect<A>
}

/** A workflow definition. Its input and output cross the log, so both are given as schemas. */
export interface Workflow<I, O, E> {
  readonly name: string
  run(input: I, context: WorkflowContext): Effect.Effect<O, E>
  decodeInput(input: unknown): Either.Either<I, ParseResult.ParseError>
  encodeInput(input: I): Either.Either<unknown, ParseResult.ParseError>
  decodeOutput(output: unknown): Either.Either<O, ParseResult.ParseError>
  encodeOutput(output: O): Either.Either<unknown, ParseResult.ParseError>
}

/** A workflow of any type, as a registry holds it. */
export type Any = Workflow<unknown, unknown, unknown>

/**
 * Defines a workflow.
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
 */
export const make = <I, II, O, OI, E>(options: {
  readonly name: string
  readonly input: Schema.Schema<I, II>
  readonly output: Schema.Schema<O, OI>
  readonly run: (input: I, context: WorkflowContext) => Effect.Effect<O, E>
}): Workflow<I, O, E> => ({
  name: options.name,
  run: options.run,
  decodeInput: Schema.decodeUnknownEither(options.input),
  encodeInput: Schema.encodeEither(options.input),
  decodeOutput: Schema.decodeUnknownEither(options.output),
  encodeOutput: Schema.encodeEither(options.output)
})
