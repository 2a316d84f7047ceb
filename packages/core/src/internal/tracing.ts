/**
 * The kernel's spans (see `Tracing.ts` and the core README, "Tracing"). Each execution of a run is a trace of its own,
 * whose id derives from the run and the owner epoch the execution writes with, so a later execution (a resume in
 * another process, a takeover) links to the one before it without storing anything: the epoch before its own names
 * it. Spans are opened with no stack trace captured and attributes built once, so a kernel with no tracer pays little.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import type { EventPayload } from "../Event.js"
import type { TenantContext } from "../Tenant.js"
import { CaptureContent } from "../Tracing.js"
import { sha256 } from "./hash.js"

/** A failure as a span shows it without content: the error's tag only (its message may hold arguments, data, prompts). */
class SpanFailure extends Error {
  constructor(tag: string) {
    super(`${tag} (its message is content: exported only under CaptureContent)`)
    this.name = tag
    this.stack = `${tag}: ${this.message}`
  }
}

/** The tag of a cause's first failure or defect. */
const tagOf = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  const error: unknown = Option.isSome(failure) ? failure.value : Option.getOrUndefined(Cause.dieOption(cause))
  if (typeof error === "object" && error !== null) {
    const tag = (error as { readonly _tag?: unknown })._tag
    if (typeof tag === "string") return tag
    if (error instanceof Error) return error.name
  }
  return Option.isSome(failure) ? "Failure" : "Defect"
}

/**
 * `Effect.withSpan`, except that a failure's text reaches the span (its status, its exception event and stack, as
 * OpenTelemetry exporters write them from the cause) only under `CaptureContent`: without it, the span fails with the
 * error's tag alone, and the effect still fails with its own cause outside the span. An error's message is content:
 * a tool's error names the customer it did not find, a divergence quotes the arguments of both calls.
 */
export const withSpan = <A, E, R>(effect: Effect.Effect<A, E, R>, name: string, options: Tracer.SpanOptions): Effect.Effect<A, E, R> =>
  Effect.flatMap(CaptureContent, (capture) => {
    if (capture) return Effect.withSpan(effect, name, options)
    let original: Cause.Cause<E> | undefined
    const quiet: Effect.Effect<A, E | SpanFailure, R> = Effect.catchAllCause(effect, (cause) => {
      original = cause
      const shown: Cause.Cause<E | SpanFailure> = Cause.isInterruptedOnly(cause) ? cause : Cause.fail(new SpanFailure(tagOf(cause)))
      return Effect.failCause(shown)
    })
    // The effect's own cause; a failure it did not raise (none is expected) as a defect.
    return Effect.catchAllCause(Effect.withSpan(quiet, name, options), (cause) => Effect.failCause(original ?? Cause.die(Cause.squash(cause))))
  })

/** `withSpan` for a pipe: `effect.pipe(Tracing.spanned("Kernel.resume"))`. */
export const spanned = (name: string, options: Tracer.SpanOptions = {}) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  withSpan(effect, name, options)

/** The synthetic parent of an execution's span: its trace id and span id derive from the run and the epoch. */
export const executionContext = (tenantId: string, runId: string, epoch: number): Tracer.ExternalSpan => {
  const digest = sha256(`artana-trace\u0000${tenantId}\u0000${runId}\u0000${epoch}`)
  return Tracer.externalSpan({ traceId: digest.slice(0, 32), spanId: digest.slice(32, 48), sampled: true })
}

export interface ExecutionInfo {
  readonly runId: string
  readonly rootRunId: string
  readonly parentRunId?: string | undefined
  readonly tenant: TenantContext
  readonly mode: "live" | "replay"
  /** The owner epoch this execution writes with (a replay: the run's current one). */
  readonly epoch: number
  readonly workflow: string
  /** Why the execution takes the run over, when it does. */
  readonly resumed?: string | undefined
}

/**
 * Effect's built-in tracer: spans that go nowhere. `Effect.withSpan` still costs a few microseconds a span under it (a
 * span object, its ids, the fiber's context swapped), about as much as a step of the in-memory store itself; so the
 * kernel opens its spans only when another tracer is installed (`@artana/otel`'s, or any OpenTelemetry layer).
 */
let builtIn: Tracer.Tracer | undefined
// (The default runtime's tracer is the built-in one, whatever a program installs in its own fibers.)
const isBuiltIn = (tracer: Tracer.Tracer): boolean => tracer === (builtIn ??= Effect.runSync(Effect.tracer))

/** Picks a span's effect: `traced()` when a tracer that exports is installed, else `untraced` as it is. */
export type When = <A, E, R>(traced: () => Effect.Effect<A, E, R>, untraced: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** `When`, asking the fiber for its tracer each time. */
const whenTraced: When = (traced, untraced) => Effect.tracerWith((tracer) => (isBuiltIn(tracer) ? untraced : traced()))

/**
 * `When` for one execution: whether its spans are exported is decided at its first span, under the tracer the
 * execution runs with (the one its `artana.run` span was opened or skipped under), and kept. A hot step (a tool step
 * opens three spans) then picks its effects without an effect of its own to read the tracer.
 */
export const decideOnce = (): When => {
  let exported: boolean | undefined
  return (traced, untraced) => {
    if (exported === undefined) {
      return Effect.tracerWith((tracer) => {
        exported = !isBuiltIn(tracer)
        return exported ? traced() : untraced
      })
    }
    return exported ? traced() : untraced
  }
}

/**
 * Runs one execution of a run under its own span (`artana.run`): the root of a trace derived from the run and its
 * epoch (a replay: a trace of its own), linked to the caller's span (a sub-agent's parent tool step) and to the
 * execution before it.
 */
export const execution = <A, E, R>(info: ExecutionInfo, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  whenTraced(() => Effect.flatMap(Effect.option(Effect.currentParentSpan), (caller) => {
    const links: Array<Tracer.SpanLink> = []
    if (Option.isSome(caller)) links.push({ _tag: "SpanLink", span: caller.value, attributes: { "artana.link": "caller" } })
    const previous = info.mode === "live" ? info.epoch - 1 : info.epoch
    if (previous >= 1) {
      links.push({ _tag: "SpanLink", span: executionContext(info.tenant.tenantId, info.runId, previous), attributes: { "artana.link": "previous_execution" } })
    }
    const attributes: Record<string, unknown> = {
      "artana.run_id": info.runId,
      "artana.root_run_id": info.rootRunId,
      "artana.tenant_id": info.tenant.tenantId,
      "artana.workflow": info.workflow,
      "artana.mode": info.mode,
      "artana.owner_epoch": info.epoch
    }
    if (info.parentRunId !== undefined) attributes["artana.parent_run_id"] = info.parentRunId
    if (info.resumed !== undefined) attributes["artana.resumed"] = info.resumed
    return withSpan(effect, "artana.run", {
      ...(info.mode === "live" ? { parent: executionContext(info.tenant.tenantId, info.runId, info.epoch) } : { root: true }),
      links,
      attributes,
      captureStackTrace: false
    })
  }), effect)

/** What a span records of its effect's value: attributes, and content attributes (kept only under `CaptureContent`). */
export interface After<A> {
  readonly attributes?: ((a: A) => Record<string, unknown>) | undefined
  readonly content?: ((a: A) => Record<string, unknown>) | undefined
}

/** A step's span, opened with no stack trace; `after` annotates it with what the step returned. */
export const span = <A, E, R>(name: string, attributes: Record<string, unknown>, effect: Effect.Effect<A, E, R>, after?: After<A>): Effect.Effect<A, E, R> =>
  spanWith(name, () => attributes, effect, () => after)

/** `span`, its attributes and `after` built only when the span is opened (a hot step allocates nothing for it otherwise). */
export const spanWith = <A, E, R>(
  name: string,
  attributes: () => Record<string, unknown>,
  effect: Effect.Effect<A, E, R>,
  after: () => After<A> | undefined,
  when: When = whenTraced
): Effect.Effect<A, E, R> =>
  when(() => {
    const recorded = after()
    const spanned = recorded === undefined ? effect : Effect.tap(effect, (a) => recordAfter(recorded, a))
    return withSpan(spanned, name, { attributes: attributes(), captureStackTrace: false })
  }, effect)

const recordAfter = <A>(after: After<A>, a: A): Effect.Effect<void> => {
  const annotated = after.attributes === undefined ? Effect.void : Effect.annotateCurrentSpan(after.attributes(a))
  const content = after.content
  if (content === undefined) return annotated
  return Effect.zipRight(annotated, Effect.flatMap(CaptureContent, (capture) => (capture ? Effect.annotateCurrentSpan(content(a)) : Effect.void)))
}

/** Annotates the current span (the step's) when spans are opened; `attributes` is not even built otherwise. */
export const annotate = (attributes: () => Record<string, unknown> | undefined): Effect.Effect<void> =>
  whenTraced(() => {
    const built = attributes()
    return built === undefined ? Effect.void : Effect.annotateCurrentSpan(built)
  }, Effect.void)

/** Annotates the current span with content (prompts, arguments, results) only when `CaptureContent` is on. */
export const annotateContent = (attributes: () => Record<string, unknown>): Effect.Effect<void> =>
  whenTraced(() => Effect.flatMap(CaptureContent, (capture) => (capture ? Effect.annotateCurrentSpan(attributes()) : Effect.void)), Effect.void)

/**
 * A batch's append under its `artana.append` span; what the batch decided (`decisionsOf`) annotates the step's span
 * around it.
 */
export const append = <A, E, R>(
  stepKey: string,
  payloads: ReadonlyArray<EventPayload>,
  write: Effect.Effect<A, E, R>,
  when: When = whenTraced
): Effect.Effect<A, E, R> =>
  when(() => {
    const spanned = withSpan(write, "artana.append", { attributes: { "artana.step_key": stepKey, "artana.events": payloads.length }, captureStackTrace: false })
    const decisions = decisionsOf(payloads)
    return decisions === undefined ? spanned : Effect.zipRight(Effect.annotateCurrentSpan(decisions), spanned)
  }, write)

/** JSON text of a value for a span attribute. */
export const json = (value: unknown): string => JSON.stringify(value) ?? "null"

/** The numbers of a note's data, down to `depth` objects deep (the PII scrubber's `{ total, counts: { email } }`). */
const numbersOf = (data: unknown, prefix: string, depth: number, set: (key: string, value: unknown) => void): void => {
  if (depth === 0 || typeof data !== "object" || data === null || Array.isArray(data)) return
  for (const [k, v] of Object.entries(data)) {
    if (typeof v === "number") set(`${prefix}.${k}`, v)
    else numbersOf(v, `${prefix}.${k}`, depth - 1, set)
  }
}

/**
 * What a batch the kernel appends decided, as attributes of the current span: denials (with their reason and the
 * middleware), budget stops, and middleware notes' numbers (PII counts); never a note's text.
 */
export const decisionsOf = (payloads: ReadonlyArray<EventPayload>): Record<string, unknown> | undefined => {
  let out: Record<string, unknown> | undefined
  const set = (key: string, value: unknown) => void ((out ??= {})[key] = value)
  for (const p of payloads) {
    switch (p._tag) {
      case "PolicyDenied":
        set("artana.policy.denied", true)
        set("artana.policy.reason", p.reason)
        if (p.middleware !== undefined) set("artana.policy.middleware", p.middleware)
        if (p.capability !== undefined) set("artana.policy.capability", p.capability)
        break
      case "BudgetExceeded":
        set("artana.budget.exceeded", true)
        set("artana.budget.limit_usd", p.limitUsd)
        set("artana.budget.spent_usd", p.spentUsd)
        set("artana.budget.phase", p.phase)
        break
      case "MiddlewareNote":
        set(`artana.middleware.${p.middleware}.${p.note}`, true)
        numbersOf(p.data, `artana.middleware.${p.middleware}.${p.note}`, 2, set)
        break
    }
  }
  return out
}
