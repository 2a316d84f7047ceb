/**
 * A running run's page follows it over server-sent events, from core's `Kernel.live` (the run's log events and its
 * streamed replies' deltas, resumable from an offset): each log event is sent as its timeline row (`event: log`, read
 * from the store by its seq so it renders as the page's own rows do), a reply's text as it streams (`event: delta`),
 * and `event: settled` once the run completed, failed, continued or paused (the page then reloads). Each message's id is
 * its live offset: a browser that reconnects sends it back (`Last-Event-ID`) and gets what followed it, once.
 */
import { EventStore, Kernel, type Live } from "@artana/core"
import type { Context } from "hono"
import { streamSSE } from "hono/streaming"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import type { Run } from "./run.js"
import { eventRow } from "./views/run.js"

const SETTLING = new Set(["Completed", "Failed", "Continued", "Paused", "ApprovalPending"])

/** What one live item is sent as: a row, a delta's text, or nothing (a kind the page shows by its row). */
const messageOf = (tenantId: string, runId: string, startedAt: number, item: Live.LiveEvent) =>
  Effect.gen(function*() {
    if (item._tag === "TextDelta") return { event: "delta", data: item.text, id: item.offset }
    if (item.offset.includes(".")) return undefined
    const store = yield* EventStore.EventStore
    const [event] = yield* store.readEvents(tenantId, runId, Number(item.offset), 1)
    return event === undefined ? undefined : { event: "log", data: String(eventRow(startedAt, event)), id: item.offset }
  })

export const liveRoute = (c: Context, run: Run, tenantId: string, runId: string) =>
  streamSSE(c, async (sse) => {
    const after = c.req.header("last-event-id") ?? c.req.query("after")
    const follow = Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const info = yield* Effect.flatMap(EventStore.EventStore, (store) => store.getRun(tenantId, runId))
      yield* kernel.live({ tenantId, runId }, { after: after === "" ? undefined : after }).pipe(
        Stream.takeUntil((item) => SETTLING.has(item._tag)),
        Stream.runForEach((item) =>
          Effect.gen(function*() {
            const message = yield* messageOf(tenantId, runId, info.createdAt, item)
            if (message !== undefined) yield* Effect.promise(() => sse.writeSSE(message))
            if (SETTLING.has(item._tag)) yield* Effect.promise(() => sse.writeSSE({ event: "settled", data: item._tag, id: item.offset }))
          }))
      )
    })
    const controller = new AbortController()
    sse.onAbort(() => controller.abort())
    const exit = await run(Effect.raceFirst(follow, Effect.async<void>((resume) => {
      if (controller.signal.aborted) return resume(Effect.void)
      controller.signal.addEventListener("abort", () => resume(Effect.void), { once: true })
    })))
    if (Exit.isFailure(exit) && !controller.signal.aborted) await sse.writeSSE({ event: "failed", data: "the run could not be followed" })
  })
