/**
 * What a fork carries of its source's spend beyond the events it copies (`ForkedFrom.carriedUsd`): what the source's
 * sub-runs spent (their calls are in their own logs; the source's log holds only the tool step's result), and what the
 * source itself carried when it is a fork. Logged in the fork's `RunStarted`, so the fork's record, the sum of its log,
 * holds it, and the fork's budget starts where the source's lineage was at the prefix's end.
 */
import * as Effect from "effect/Effect"
import type { RunInfo } from "../Event.js"
import type * as EventStore from "../EventStore.js"

/** Runs listed a page at a time. */
const PAGE = 500

/**
 * The spend `info`'s fork at `seq` carries: the source's own carried spend, and the cost of every run below it (its
 * sub-runs, theirs, ...) created no later than the event at `seq`. A sub-run a step of the prefix started was created
 * before the step settled, so before the prefix's end; one started by a later step was created after it. (A sub-run
 * created in the same millisecond as the prefix's last event is counted: a fork never starts with less spent.)
 */
export const carriedSpend = (store: EventStore.Service, info: RunInfo, seq: number) =>
  Effect.gen(function*() {
    const started = (yield* store.readEvents(info.tenantId, info.runId, 1, 1))[0]?.payload
    const own = started?._tag === "RunStarted" ? started.forkedFrom?.carriedUsd ?? 0 : 0
    const last = (yield* store.readEvents(info.tenantId, info.runId, seq, 1))[0]
    const until = (last?.timestamp ?? info.updatedAt) + 1
    const children = new Map<string, Array<RunInfo>>()
    let after: string | undefined
    do {
      const page = yield* store.listRunsPage(info.tenantId, { rootRunId: info.rootRunId, createdUntil: until, limit: PAGE, after })
      for (const run of page.runs) {
        if (run.parentRunId === undefined) continue
        const siblings = children.get(run.parentRunId)
        if (siblings === undefined) children.set(run.parentRunId, [run])
        else siblings.push(run)
      }
      after = page.next
    } while (after !== undefined)
    let carried = own
    const below = [...(children.get(info.runId) ?? [])]
    for (let run = below.pop(); run !== undefined; run = below.pop()) {
      carried += run.costUsd
      below.push(...(children.get(run.runId) ?? []))
    }
    return carried
  })
