/**
 * Tools: a name, a description, an Effect Schema for the arguments (the model sees its JSON Schema), an
 * optional required capability and idempotency flag, and a handler.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import type * as Schema from "effect/Schema"
import type { ToolSpec } from "./Chat.js"
import { InvalidToolArguments, PolicyDenied, ToolError, ToolOutcomeUnknown, WaitingOnRun } from "./Errors.js"
import { decodeExact, encodeExact } from "./internal/exactGuard.js"
import type { Lease } from "./Lease.js"
import * as Json from "./Json.js"
import type { TenantContext } from "./Tenant.js"

/** What a handler learns about the call, passed as its last argument. */
export interface ToolContext {
  readonly runId: string
  readonly tenant: TenantContext
  /** Stable across re-runs of the same step: pass it to the system you call so it can deduplicate. */
  readonly idempotencyKey: string
  readonly stepKey: string
  /**
   * The fencing token: the run's owner epoch for this execution, higher for every later execution of the run. A
   * system that records the highest token it saw per run (or per idempotency key) can refuse a stale writer.
   */
  readonly fence: number
  /** Aborted when this execution loses the run (its lease ran out or was taken over, or a newer owner wrote). */
  readonly signal: AbortSignal
  /**
   * This execution's hold on the run, to hand to a run the handler drives (a sub-agent's): that run's handlers then
   * start only while this execution still holds its own (`expiresAt` is its caller's lease, or never without one).
   */
  readonly lease: Lease
}

/** What a tool's `needsApproval` learns about the call it decides on. */
export interface ApprovalContext {
  readonly runId: string
  readonly tenant: TenantContext
  readonly stepKey: string
}

/**
 * Whether a call waits for a person's approval before it runs: always (`true`), never (`false`, the default), or as
 * a predicate of the decoded arguments decides (`(args, ctx) => Effect<boolean>`; a predicate that fails or dies asks
 * for approval: it fails closed).
 */
export type NeedsApproval<Args> = boolean | ((args: Args, context: ApprovalContext) => Effect.Effect<boolean, unknown>)

/** A registered tool. `Args` is the decoded argument type, `Result` what the handler returns. */
export interface Tool<Args = unknown, Result = unknown> {
  readonly name: string
  readonly description: string
  readonly requiresCapability: string | undefined
  readonly idempotent: boolean
  /** How an idempotent tool's call is logged (see `Durability`); undefined: the kernel's default. */
  readonly durability?: Durability | undefined
  readonly timeout: Duration.Duration | undefined
  /**
   * Whether this call waits for a person's approval (see `ToolOptions.needsApproval`); absent: never. The kernel asks
   * once, live, after the arguments decoded; the log remembers the answer.
   */
  needsApproval?(args: Args, context: ApprovalContext): Effect.Effect<boolean>
  /** Who may decide its approvals (names or roles your application checks); absent or empty: any approver of the tenant. */
  readonly approvers?: ReadonlyArray<string> | undefined
  /** What the model sees. */
  readonly spec: ToolSpec
  /**
   * Decodes the model's JSON text; the error names the path of the first problem. A property the schema does not
   * declare is an error (`is unexpected`), never silently dropped.
   */
  decodeArguments(json: string): Either.Either<Args, InvalidToolArguments>
  /** Encodes arguments given by code into the JSON text that is logged; unknown properties are refused here too. */
  encodeArguments(args: Args): Either.Either<string, InvalidToolArguments>
  /**
   * Runs the handler. `PolicyDenied` is a denial only execution could find (a name that resolves to a private
   * address, a file swapped for a link): the kernel logs it as a denial, like a middleware's. `WaitingOnRun` says
   * the call waits on another run that needs reconciliation: the kernel runs it again once that run is settled.
   * `ToolOutcomeUnknown` says the call may or may not have acted: a non-idempotent tool's step is then in doubt.
   */
  invoke(args: Args, context: ToolContext): Effect.Effect<Result, ToolError | PolicyDenied | WaitingOnRun | ToolOutcomeUnknown>
  encodeResult(result: Result): Either.Either<Json.Json, ToolError>
  decodeResult(json: Json.Json): Either.Either<Result, ToolError>
}

/** How a tool call is logged: its request before the handler and its outcome after (two commits), or both after. */
export type Durability = "two-phase" | "one-commit"

export interface ToolOptions<Args, ArgsEncoded, Result, ResultEncoded> {
  /** Unique name the model calls the tool by (`[a-zA-Z0-9_.-]`, at most 64 characters). */
  readonly name: string
  readonly description: string
  readonly parameters: Schema.Schema<Args, ArgsEncoded>
  /** Schema of the result; defaults to any JSON value. */
  readonly success?: Schema.Schema<Result, ResultEncoded> | undefined
  /** Capability the tenant must hold for the tool to be visible and callable. */
  readonly requiresCapability?: string | undefined
  /** Safe to run again with the same idempotency key when a crash leaves the call in doubt. Default false. */
  readonly idempotent?: boolean | undefined
  /**
   * How the call is logged, for an idempotent tool: `"two-phase"` (its request is durable before the handler starts,
   * then its outcome: the log shows every attempt) or `"one-commit"` (request and outcome in one commit after the
   * handler: half the commits; a crash mid-handler leaves no trace, and the call runs again, once, with the same
   * idempotency key). Default: the kernel's `idempotentToolDurability`, itself `"two-phase"`. A tool that is not
   * idempotent is always two-phase.
   */
  readonly durability?: Durability | undefined
  /** Deadline for one call; past it the call fails as a timeout. */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * A person approves each call before it runs: the kernel logs a pending approval (`ApprovalRequested`, with the
   * arguments after the `beforeTool` middleware) before the call's `ToolRequested`, and the run pauses there until
   * someone approves it (optionally with edited arguments, checked against `parameters`) or rejects it (the model
   * sees the rejection as the call's result). `true`, or a predicate of the decoded arguments. Default false.
   */
  readonly needsApproval?: NeedsApproval<Args> | undefined
  /** Who may decide this tool's approvals (`Artana.approve({ approver })` is checked against it); default anyone. */
  readonly approvers?: ReadonlyArray<string> | undefined
  /**
   * The handler: decoded arguments, then the context. May return an Effect or a Promise. Failing with
   * `PolicyDenied` denies the call (logged as a denial); with `WaitingOnRun`, the call waits on a run in doubt (see
   * `Errors.WaitingOnRun`); any other failure is a `ToolError`.
   */
  readonly handler: (args: Args, context: ToolContext) => Effect.Effect<Result, unknown> | Promise<Result>
}

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((acc, key) => (typeof key === "number" ? `${acc}[${key}]` : `${acc}.${String(key)}`), "$")

/** The first problem of a parse error, as `{ path, reason }`. */
export const firstIssue = (error: ParseResult.ParseError): { readonly path: string; readonly reason: string } => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  return issue === undefined ? { path: "$", reason: error.message } : { path: formatPath(issue.path), reason: issue.message }
}

type JsonNode = Json.Json

/** Replaces `#/$defs/X` references by their definitions, except cyclic ones (which keep `$defs`). */
const inlineRefs = (node: JsonNode, defs: Json.JsonObject, seen: ReadonlySet<string>): JsonNode => {
  if (Array.isArray(node)) return node.map((n: JsonNode) => inlineRefs(n, defs, seen))
  if (!Json.isObject(node)) return node
  const obj = node
  const ref = obj["$ref"]
  if (typeof ref === "string" && ref.startsWith("#/$defs/")) {
    const name = ref.slice("#/$defs/".length)
    const def = defs[name]
    if (Json.isObject(def) && !seen.has(name)) {
      const { $ref: _ref, ...siblings } = obj
      return inlineRefs({ ...def, ...siblings }, defs, new Set([...seen, name]))
    }
    return node
  }
  const out: Record<string, JsonNode> = {}
  for (const [k, v] of Object.entries(obj)) out[k] = inlineRefs(v, defs, seen)
  return out
}

/** The JSON Schema of an Effect Schema, as a plain JSON object: no `$schema`, references inlined. */
export const jsonSchemaOf = (schema: Schema.Schema.Any): Json.JsonObject => {
  const { $schema: _ignored, ...rest } = JSONSchema.make(schema)
  const checked = Json.fromUnknown(rest)
  if (!checked.ok || !Json.isObject(checked.json)) {
    throw new Error(`JSON Schema generation produced a non-object: ${checked.ok ? "" : checked.error}`)
  }
  const root = checked.json
  const defs = root["$defs"]
  if (!Json.isObject(defs)) return root
  const { $defs: _defs, ...body } = root
  const inlined = inlineRefs(body, defs, new Set())
  if (!Json.isObject(inlined)) return root
  return JSON.stringify(inlined).includes('"$ref"') ? { ...inlined, $defs: defs } : inlined
}

const NAME = /^[a-zA-Z0-9_.-]{1,64}$/

/** `needsApproval` as the kernel asks it; undefined: never. A predicate that fails or dies asks for approval. */
const approvalPredicate = <Args>(
  rule: NeedsApproval<Args> | undefined
): ((args: Args, context: ApprovalContext) => Effect.Effect<boolean>) | undefined => {
  if (rule === undefined || rule === false) return undefined
  if (rule === true) return () => Effect.succeed(true)
  return (args, context) => Effect.catchAllCause(Effect.suspend(() => rule(args, context)), () => Effect.succeed(true))
}

const toToolError = (tool: string, error: unknown): ToolError | PolicyDenied | WaitingOnRun | ToolOutcomeUnknown => {
  if (error instanceof ToolError || error instanceof PolicyDenied || error instanceof WaitingOnRun || error instanceof ToolOutcomeUnknown) return error
  const reason = error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error)
  return new ToolError({ tool, reason: reason ?? String(error), cause: error })
}

/**
 * Defines a tool.
 *
 * @example
 * const getBalance = Tool.make({
 *   name: "get_balance",
 *   description: "Balance of an account in USD",
 *   parameters: Schema.Struct({ accountId: Schema.String }),
 *   requiresCapability: "finance:read",
 *   idempotent: true,
 *   handler: ({ accountId }) => Effect.succeed({ accountId, balance: 1200 })
 * })
 */
export const make = <Args, ArgsEncoded, Result = Json.Json, ResultEncoded = Json.Json>(
  options: ToolOptions<Args, ArgsEncoded, Result, ResultEncoded>
): Tool<Args, Result> => {
  if (!NAME.test(options.name)) {
    throw new Error(`tool name "${options.name}" must match ${NAME.source} (model APIs refuse other names)`)
  }
  if (options.durability === "one-commit" && options.idempotent !== true) {
    throw new Error(`tool "${options.name}": durability "one-commit" needs an idempotent tool (a crash mid-handler runs it again)`)
  }
  const name = options.name
  const success: Schema.Schema<Result, ResultEncoded> | Schema.Schema<Json.Json> = options.success ?? Json.Json
  const decodeArgs = decodeExact(options.parameters)
  const encodeArgs = encodeExact(options.parameters)
  // Compiled once: a result the schema returns unchanged (plain JSON for the default `Json`) skips the schema's parse.
  const encodeResult = encodeExact(success as Schema.Schema<Result, unknown>)
  const decodeResult = decodeExact(success as Schema.Schema<Result, unknown>)
  const timeout = options.timeout === undefined ? undefined : Duration.decode(options.timeout)
  const invalid = (path: string, reason: string) => new InvalidToolArguments({ tool: name, path, reason })
  const needsApproval = approvalPredicate(options.needsApproval)
  return {
    name,
    description: options.description,
    requiresCapability: options.requiresCapability,
    idempotent: options.idempotent ?? false,
    durability: options.durability,
    timeout,
    ...(needsApproval === undefined ? {} : { needsApproval: (args: Args, context: ApprovalContext) => needsApproval(args, context) }),
    ...(options.approvers === undefined || options.approvers.length === 0 ? {} : { approvers: [...options.approvers] }),
    spec: { name, description: options.description, parameters: jsonSchemaOf(options.parameters) },
    decodeArguments(json) {
      let parsed: unknown
      try {
        parsed = JSON.parse(json)
      } catch (e) {
        return Either.left(invalid("$", `not valid JSON (${e instanceof Error ? e.message : String(e)})`))
      }
      // Unknown properties are refused, not stripped: a caller whose argument was dropped would believe it took effect
      // (and the JSON Schema the model sees says `additionalProperties: false`).
      return Either.mapLeft(decodeArgs(parsed, { errors: "first", onExcessProperty: "error" }), (error) => {
        const issue = firstIssue(error)
        return invalid(issue.path, issue.reason)
      })
    },
    encodeArguments(args) {
      return Either.flatMap(
        Either.mapLeft(encodeArgs(args, { onExcessProperty: "error" }), (error) => {
          const issue = firstIssue(error)
          return invalid(issue.path, issue.reason)
        }),
        (encoded) => {
          // Plain JSON is written as it is; anything else is copied to JSON first, or refused with the reason.
          if (Json.isJson(encoded)) return Either.right(JSON.stringify(encoded))
          const checked = Json.fromUnknown(encoded)
          return checked.ok ? Either.right(JSON.stringify(checked.json)) : Either.left(invalid("$", checked.error))
        }
      )
    },
    invoke(args, context) {
      const run = Effect.suspend(() => {
        const out = options.handler(args, context)
        return Effect.isEffect(out) ? out : Effect.tryPromise({ try: () => out, catch: (e) => e })
      })
      // A defect, or else each failure, becomes the tool's error; an interruption stays one. One node for both (not
      // `mapError` then `catchAllDefect`): this runs once per live tool step.
      const guarded = Effect.catchAllCause(run, (cause) => {
        const defect = Cause.dieOption(cause)
        if (Option.isSome(defect)) return Effect.fail(toToolError(name, defect.value))
        return Effect.failCause(Cause.map(cause, (e) => toToolError(name, e)))
      })
      return timeout === undefined
        ? guarded
        : Effect.timeoutFail(guarded, {
          duration: timeout,
          onTimeout: () => new ToolError({ tool: name, reason: `timed out after ${Duration.format(timeout)}`, timedOut: true })
        })
    },
    encodeResult(result) {
      return Either.flatMap(
        Either.mapLeft(encodeResult(result), (e) => new ToolError({ tool: name, reason: `result does not match its schema: ${firstIssue(e).reason}` })),
        (encoded) => {
          // Plain JSON (the common result) is logged as it is, as arguments are: no copy, node by node, with its paths.
          if (Json.isJson(encoded)) return Either.right(encoded)
          const checked = Json.fromUnknown(encoded)
          return checked.ok ? Either.right(checked.json) : Either.left(new ToolError({ tool: name, reason: `result is not JSON: ${checked.error}` }))
        }
      )
    },
    decodeResult(json) {
      return Either.mapLeft(decodeResult(json), (e) => {
        const issue = firstIssue(e)
        return new ToolError({ tool: name, reason: `the result does not match the tool's result schema at ${issue.path}: ${issue.reason}` })
      })
    }
  }
}
