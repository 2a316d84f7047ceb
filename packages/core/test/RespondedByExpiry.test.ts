// a responded task of a repeating series that expires before a worker takes it: its response (and who gave
// it) must not be carried to the series' next occurrence, a new task with a new run.
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { TaskQueue, Tenant } from "@artana/core"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const DAY = 24 * 60 * 60 * 1000

describe("a responded occurrence that expires unclaimed", () => {
  it.effect("leaves the next occurrence without its response and its respondedBy", () =>
    Effect.gen(function*() {
      const queue = yield* TaskQueue.makeMemory
      const first = yield* queue.enqueue({ workflow: "review", input: {}, tenant, repeatIntervalSeconds: 3600 })
      yield* queue.claim({ workerId: "w1", limit: 1, leaseSeconds: 10 })
      yield* queue.finish(first.taskId, "w1", { _tag: "paused", ticket: "t-1", reason: "approve" })
      yield* queue.respond("acme", first.taskId, { approved: true }, { respondedBy: "ann@acme" })
      // No worker for more than a day: the responded occurrence expires, the series goes on.
      yield* TestClock.adjust(2 * DAY)
      expect(yield* queue.expire()).toBe(1)
      const next = (yield* queue.list("acme", {})).find((t) => t.taskId !== first.taskId)
      expect(next).toBeDefined()
      expect(next?.runId).not.toBe(first.runId)
      expect({ response: next?.response, respondedBy: next?.respondedBy }).toEqual({ response: undefined, respondedBy: undefined })
    }))
})
