/**
 * What the kernel reads of a run: its events verified (whole, as a stream of pages, or its last one that matches),
 * its chain checked (`verify`), and the run as it happens (`live`: events and streamed deltas). And the deltas kept
 * while a run is live, dropped once an execution leaves it ended.
 */
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import * as Errors from "../Errors.js"
import type { Event } from "../Event.js"
import * as EventStore from "../EventStore.js"
import type { EventsOptions, LiveOptions, Options, RunRef, RunResult, Service } from "../Kernel.js"
import * as Live from "../Live.js"
import * as Verify from "../Verify.js"
import type * as Execution from "./execution.js"
import { chainEnd } from "./chain.js"
import { dropDeltas, dropOwnDeltas } from "./deltaRetention.js"
import { lastVerifiedEvent, verifiedEvents } from "./ledger.js"
import * as LiveRead from "./live.js"

/**
 * `dropDeltasAfter(tenantId, runId)`: what an execution of the run does on exit with the deltas of its streamed calls.
 * A run that continued as new dropped its own at the handover (`continueAsNew`); the execution ends in the last run of
 * its chain, whose deltas go here once it ended.
 */
export const deltaCleanup = (deps: Execution.Deps) => {
  const { store } = deps
  /** Deltas are kept while the run is live: once an execution leaves it ended, they go. */
  const dropDeltasIfEnded = (tenantId: string, runId: string) =>
    Effect.ignore(Effect.gen(function*() {
      const info = yield* chainEnd(store, yield* store.getRun(tenantId, runId))
      if (info.status === "completed" || info.status === "failed") yield* dropDeltas(deps, info.tenantId, info.runId)
    }))
  /**
   * `dropDeltasIfEnded`, after an execution: its result says whether the run it ended in (`runId`, the chain's last)
   * ended or waits (paused, needs reconciliation), so only a failed or interrupted execution reads the run to know.
   * `created`: the execution created the run (its `RunStarted`); if it also completed it, without continuing as new,
   * only this process can have kept its deltas (`dropOwnDeltas`).
   */
  const dropDeltasAfter = (tenantId: string, runId: string, created = false) => <O, E>(exit: Exit.Exit<RunResult<O>, E>) =>
    Exit.isFailure(exit)
      ? dropDeltasIfEnded(tenantId, runId)
      : exit.value.status !== "completed"
      ? Effect.void
      : created && exit.value.runId === runId
      ? dropOwnDeltas(deps, tenantId, runId)
      : dropDeltas(deps, tenantId, exit.value.runId)
  return dropDeltasAfter
}

/** The kernel's reads of a run, over `deps`' store and live tier. */
export const make = (
  deps: Execution.Deps,
  kernelOptions: Options
): Pick<Service, "readEvents" | "events" | "lastEvent" | "live" | "verify"> => {
  const { notices, store } = deps
  const { hub, store: liveStore } = deps.live
  const events = (run: RunRef, options: EventsOptions = {}): Stream.Stream<Event, Errors.RunNotFound | Errors.StoreError | Errors.LogTampered> =>
    Stream.unwrap(Effect.map(store.getRun(run.tenantId, run.runId), (info) =>
      Stream.catchTag(verifiedEvents(store, deps.auditKey, info, options), "InvalidRunState", (cut) =>
        Stream.fail(new Errors.LogTampered({ runId: run.runId, seq: info.headSeq, reason: cut.status })))))

  const pollInterval = Duration.decode(kernelOptions.livePollInterval ?? Duration.millis(200))
  const live = (run: RunRef, liveOptions: LiveOptions = {}) => {
    const after = liveOptions.after === undefined ? Either.right(Live.start) : Live.parseOffset(liveOptions.after)
    if (Either.isLeft(after)) return Stream.fail(new Errors.InvalidInput({ what: "live offset", reason: after.left }))
    const pageSize = Math.max(1, Math.floor(liveOptions.pageSize ?? EventStore.DEFAULT_PAGE_SIZE))
    const readOptions = { store, live: liveStore, hub, auditKey: deps.auditKey, pollInterval, pageSize, waitForStart: liveOptions.waitForStart === true, notices }
    return LiveRead.read(readOptions, run.tenantId, run.runId, after.right)
  }

  return {
    readEvents: (run) => Stream.runCollect(events(run)).pipe(Effect.map(Chunk.toReadonlyArray), Effect.withSpan("Kernel.readEvents")),
    events,
    lastEvent: (run, matches) =>
      Effect.flatMap(store.getRun(run.tenantId, run.runId), (info) =>
        Effect.catchTag(lastVerifiedEvent(store, deps.auditKey, info, matches), "InvalidRunState", (cut) =>
          Effect.fail(new Errors.LogTampered({ runId: run.runId, seq: info.headSeq, reason: cut.status })))).pipe(Effect.withSpan("Kernel.lastEvent")),
    live,
    verify: Effect.fn("Kernel.verify")(function*(run) {
      const info = yield* store.getRun(run.tenantId, run.runId)
      const verifier = Verify.make(run.runId, {
        auditKey: deps.auditKey,
        heads: [
          { source: "store's run record", seq: info.headSeq, hash: info.headHash },
          ...(run.head === undefined ? [] : [{ source: "exported", ...run.head }])
        ],
        record: info
      })
      // A page at a time, up to the first break: memory holds a page, however long the run (`Stream.chunks` with
      // `runForEachWhile` kept every page read: out of memory under a 64 MB heap on 200,000 events).
      yield* EventStore.stream(store, run.tenantId, run.runId).pipe(
        Stream.run(Sink.forEachChunkWhile((page) => Effect.succeed(verifier.push(Chunk.toReadonlyArray(page)) === undefined)))
      )
      return verifier.finish()
    })
  }
}
