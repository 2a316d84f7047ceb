/**
 * The sandbox's decisions, read back from a run's log: for each tool call (by step key), allowed or denied, why,
 * and what it touched (files read and written, domains, commands). The records come from the middleware's notes
 * and denials (`MiddlewareNote` / `PolicyDenied` of the `sandbox` middleware), from denials the tools found while a
 * call ran (`PolicyDenied` after the call was allowed), and from what a completed `http.get` fetched (its redirects).
 *
 * @since 0.1.0
 */
import type { Event } from "@artana/core"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { AllowedNote, Containment, MIDDLEWARE } from "./internal/decision.js"

/** One call's audit record. */
export const Record = Schema.Struct({
  /** The call's step key in the run (`tool:0`, or the explicit key it was given, such as a plan's `step:<id>`). */
  stepKey: Schema.String,
  tool: Schema.String,
  decision: Schema.Literal("allowed", "denied"),
  reason: Schema.String,
  filesRead: Schema.Array(Schema.String),
  filesWritten: Schema.Array(Schema.String),
  domains: Schema.Array(Schema.String),
  commands: Schema.Array(Schema.String),
  /** How a `shell.run` step was contained (mechanism, paths bound read-only and read-write, network); absent for other tools. */
  containment: Schema.optional(Containment)
})
export type Record = typeof Record.Type

const decodeNote = Schema.decodeUnknownEither(AllowedNote)
const Hops = Schema.Struct({ hops: Schema.Array(Schema.Struct({ host: Schema.String })) })
const decodeHops = Schema.decodeUnknownEither(Hops)

const empty = (stepKey: string, tool: string, decision: Record["decision"], reason: string): Record => ({
  stepKey, tool, decision, reason, filesRead: [], filesWritten: [], domains: [], commands: []
})

/** Updates the records (by step key) with one event of the run. */
const apply = (out: Map<string, Record>, event: Event.Event): void => {
  const p = event.payload
  const current = out.get(event.stepKey)
  if (p._tag === "MiddlewareNote" && p.middleware === MIDDLEWARE && p.note === "allowed") {
    const note = decodeNote(p.data)
    if (Either.isRight(note)) {
      const n = note.right
      out.set(event.stepKey, {
        ...empty(event.stepKey, n.tool, "allowed", n.reason),
        filesRead: n.filesRead ?? [],
        filesWritten: n.filesWritten ?? [],
        domains: n.domains ?? [],
        commands: n.commands ?? [],
        ...(n.containment === undefined ? {} : { containment: n.containment })
      })
    }
  } else if (p._tag === "PolicyDenied" && p.middleware === MIDDLEWARE) {
    out.set(event.stepKey, empty(event.stepKey, p.tool, "denied", p.reason))
  } else if (p._tag === "PolicyDenied" && p.middleware === undefined && current !== undefined && current.decision === "allowed") {
    // A denial the tool found while the call ran (a name resolving to a private address, a file swapped for a
    // link): what it was about to touch stays on the record.
    out.set(event.stepKey, { ...current, decision: "denied", reason: p.reason })
  } else if (p._tag === "ToolCompleted" && current !== undefined && current.tool === "http.get") {
    const hops = decodeHops(p.result)
    if (Either.isRight(hops)) out.set(event.stepKey, { ...current, domains: [...new Set([...current.domains, ...hops.right.hops.map((h) => h.host)])] })
  }
}

/** The audit records of a run's sandbox calls, by step key, in log order. */
export const read = (events: ReadonlyArray<Event.Event>): ReadonlyMap<string, Record> => {
  const out = new Map<string, Record>()
  for (const event of events) apply(out, event)
  return out
}

/** The audit records of a run's sandbox calls, in log order. */
export const records = (events: ReadonlyArray<Event.Event>): ReadonlyArray<Record> => [...read(events).values()]

/**
 * The audit records of a run's sandbox calls as its events stream by (`Kernel.events(run)`, a page at a time): each
 * record once its call's outcome is logged (`ToolCompleted` / `ToolFailed`), then, when the events end, the records
 * of calls with no outcome (in doubt). Memory holds the records of the calls in progress, however long the run.
 *
 * @example
 * const denied = yield* Audit.stream(kernel.events({ tenantId, runId })).pipe(
 *   Stream.filter((r) => r.decision === "denied"),
 *   Stream.runCollect
 * )
 */
export const stream = <E, R>(events: Stream.Stream<Event.Event, E, R>): Stream.Stream<Record, E, R> =>
  Stream.suspend(() => {
    const open = new Map<string, Record>()
    const ended = Stream.mapConcat(events, (event): ReadonlyArray<Record> => {
      apply(open, event)
      const tag = event.payload._tag
      if (tag !== "ToolCompleted" && tag !== "ToolFailed") return []
      const record = open.get(event.stepKey)
      if (record === undefined) return []
      open.delete(event.stepKey)
      return [record]
    })
    return Stream.concat(ended, Stream.suspend(() => Stream.fromIterable([...open.values()])))
  })
