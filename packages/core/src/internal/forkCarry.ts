/**
 * What a fork carries of its source's spend beyond the events it copies (`ForkedFrom.carriedUsd`): what the rest of
 * the source's lineage spent (sub-runs' calls are in their own logs, the source's log holds only the tool step's result;
 * a continue-as-new chain's earlier runs and a sub-run's parent spent the same budget), and what the source itself
 * carried when it is a fork. Logged in the fork's `RunStarted`, so the fork's record, the sum of its log,
 * holds it, and the fork's budget starts where the source's lineage was at the prefix's end.
 */
import * as Effect from "effect/Effect"
import type { RunInfo } from "../Event.js"
import type * as EventStore from "../EventStore.js"

/** Runs listed a page at a time. */
const PAGE = 500

/**
 * The spend `info`'s fork at `seq` carries: the source's own carried spend, and the cost of every other run of its
 * lineage created no later than the event at `seq`: its sub-runs (theirs too), and, for a run that is not the root, the
 * runs before and above it (a continue-as-new chain's earlier generations, a sub-run's parent and siblings), all of
 * which spent the budget the source ran on. A sub-run a step of the prefix started was created before the step
 * settled, so before the prefix's end; one started by a later step, after it. (A run created in the same millisecond
 * as the prefix's last event is counted, and so is what a counted run spent after the prefix's end: a fork never
 * starts with less spent.)
 */
export const carriedSpend = (store: EventStore.Service, info: RunInfo, seq: number) =>
  Effect.gen(function*() {
    const started = (yield* store.readEvents(info.tenantId, info.runId, 1, 1))[0]?.payload
    let carried = started?._tag === "RunStarted" ? started.forkedFrom?.carriedUsd ?? 0 : 0
    const last = (yield* store.readEvents(info.tenantId, info.runId, seq, 1))[0]
    const until = (last?.timestamp ?? info.updatedAt) + 1
    let after: string | undefined
    do {
      const page = yield* store.listRunsPage(info.tenantId, { rootRunId: info.rootRunId, createdUntil: until, limit: PAGE, after })
      for (const run of page.runs) if (run.runId !== info.runId) carried += run.costUsd
      after = page.next
    } while (after !== undefined)
    return carried
  })
