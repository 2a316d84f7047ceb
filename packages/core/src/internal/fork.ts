/**
 * Writing a fork's log (`Kernel.fork`): the request checked, the prefix's end found (the last step boundary at or
 * before the point asked for: `forkCut.ts`), the results it replaces (`forkOverrides.ts`), and the copy written
 * (`forkCopy.ts`); the same fork asked again, or written meanwhile by a racing request, is found and returned.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Errors from "../Errors.js"
import type { ForkedFrom } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import * as Fork from "../Fork.js"
import { carriedSpend } from "./forkCarry.js"
import { copy } from "./forkCopy.js"
import { boundary, stepEnd } from "./forkCut.js"
import { overridesAt } from "./forkOverrides.js"

const sameFork = (a: ForkedFrom, b: ForkedFrom) =>
  a.runId === b.runId && a.seq === b.seq && (a.overridden ?? []).join("\u0000") === (b.overridden ?? []).join("\u0000")

/** The fork `forkRunId` if it exists: the same fork (`created: false`), else `InvalidInput` (the id is another run's). */
const existing = (store: EventStore.Service, tenantId: string, forkRunId: string, forkedFrom: ForkedFrom) =>
  Effect.gen(function*() {
    const first = yield* Effect.catchTag(store.readEvents(tenantId, forkRunId, 1, 1), "RunNotFound", () => Effect.succeed([]))
    const started = first[0]?.payload
    if (started === undefined) return undefined
    if (started._tag !== "RunStarted" || started.forkedFrom === undefined || !sameFork(started.forkedFrom, forkedFrom)) {
      return yield* new Errors.InvalidInput({
        what: "fork run id",
        reason: `run ${forkRunId} exists and is not the fork of run ${forkedFrom.runId} at seq ${forkedFrom.seq} asked for: give another forkRunId`
      })
    }
    return { runId: forkRunId, forkedFrom: started.forkedFrom, created: false } satisfies Fork.Forked
  })

const checked = (request: Fork.ForkRequest): Either.Either<void, Errors.InvalidInput> => {
  const bad = (reason: string) => Either.left(new Errors.InvalidInput({ what: "fork point", reason }))
  if (request.atSeq !== undefined) {
    return Number.isInteger(request.atSeq) && request.atSeq >= 1 ? Either.right(undefined) : bad(`atSeq must be a seq of the run (an integer from 1), not ${request.atSeq}`)
  }
  return typeof request.atStep === "string" && request.atStep.length > 0 ? Either.right(undefined) : bad("give atSeq or atStep")
}

/**
 * Writes the fork's log (runs no code): the prefix of `request.runId` up to the last step boundary at or before the
 * point asked for, with its overrides, under the fork's id, in one transaction. The same fork asked again (or written
 * meanwhile by a racing request) is returned with `created: false`.
 */
export const write = (store: EventStore.Service, auditKey: string | undefined, request: Fork.ForkRequest): Effect.Effect<Fork.Forked, Fork.ForkError> =>
  Effect.gen(function*() {
    yield* checked(request)
    const info = yield* store.getRun(request.tenantId, request.runId)
    const overrides = request.overrides ?? {}
    const limit = request.atSeq !== undefined ? Math.min(request.atSeq, info.headSeq) : yield* stepEnd(store, auditKey, info, request.atStep)
    const cut = yield* boundary(store, auditKey, info, limit, new Set(Object.keys(overrides)))
    const replacements = yield* overridesAt(info, cut, overrides)
    const overridden = Object.keys(overrides).sort()
    const asked: ForkedFrom = { runId: info.runId, seq: cut.seq, ...(overridden.length === 0 ? {} : { overridden }) }
    const forkRunId = request.forkRunId ?? Fork.forkRunId(info.runId, cut.seq, request.overrides)
    if (forkRunId === info.runId) return yield* new Errors.InvalidInput({ what: "fork run id", reason: "a fork needs an id of its own" })
    const found = yield* existing(store, info.tenantId, forkRunId, asked)
    if (found !== undefined) return found
    const carriedUsd = yield* carriedSpend(store, info, cut.seq)
    const forkedFrom: ForkedFrom = carriedUsd > 0 ? { ...asked, carriedUsd } : asked
    const written = yield* Effect.either(copy(store, auditKey, info, forkRunId, forkedFrom, replacements))
    if (Either.isRight(written)) return { runId: forkRunId, forkedFrom, created: true } satisfies Fork.Forked
    const error = written.left
    switch (error._tag) {
      case "SequenceConflict": {
        // Another request wrote a run under this id first: the same fork, or another run.
        const raced = yield* existing(store, info.tenantId, forkRunId, forkedFrom)
        if (raced !== undefined) return raced
        return yield* new Errors.StoreError({ operation: "fork", reason: `writing fork ${forkRunId} conflicted, yet no run has that id` })
      }
      case "OwnershipLost":
        return yield* new Errors.StoreError({ operation: "fork", reason: error.message })
      default:
        return yield* error
    }
  })
