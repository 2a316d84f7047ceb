// A worker that cannot be made (no threads, a permission model): core's `verifyWorker` and the store's read-ahead
// worker (`readWorker`) are each tried once per process, not once per page of the read that asked for them nor once per
// store, and every page is read and checked on the main thread. A file of its own: `node:worker_threads` is replaced
// here by a `Worker` whose constructor throws.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import type * as WorkerThreads from "node:worker_threads"
import { vi } from "vitest"
import { EventStore, ModelPort, ToolRegistry } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { verifiedPages } from "../../core/src/internal/verifiedRead.js"
import * as VerifyWorker from "../../core/src/internal/verifyWorker.js"
import { workDir } from "./helpers.js"
import { tenant } from "./child/workflows.js"

const made = vi.hoisted(() => ({ count: 0 }))
vi.mock("node:worker_threads", async (importOriginal) => {
  const actual = await importOriginal<typeof WorkerThreads>()
  class Worker {
    constructor() {
      made.count++
      throw new Error("no threads here")
    }
  }
  return { ...actual, Worker }
})

const noModel = ModelPort.make({ defaultModel: "none", generate: () => Effect.dieMessage("a long run calls no model") })
const storeOn = (db: string) => Layer.mergeAll(SqliteStore.layer({ filename: db }), Layer.succeed(ModelPort.ModelPort, noModel), ToolRegistry.layer([]))

/** Every event of run "long" through `verifiedPages`, in pages of 100. */
const readAll = Effect.gen(function*() {
  const store = yield* EventStore.EventStore
  const next = verifiedPages(store, undefined, yield* store.getRun(tenant.tenantId, "long"), { pageSize: 100 })
  let events = 0
  for (;;) {
    const page = yield* next
    if (Option.isNone(page)) return events
    events += page.value.length
  }
})

describe("a verify worker that cannot be made", () => {
  it.scopedLive("is tried once, not for each page of a read nor each store, and the read is checked on the main thread", () =>
    Effect.gen(function*() {
      const { db } = yield* workDir
      const layer = storeOn(db)
      yield* Effect.provide(Effect.flatMap(EventStore.EventStore, (store) => TestLog.LongRun.write(store, { runId: "long", tenant, steps: 1_000 })), layer)
      // The read-ahead worker, then the verify worker; the second read opens the store again.
      const attempts = 2
      expect(yield* Effect.provide(readAll, layer)).toBe(1_002)
      expect(made.count).toBe(attempts)
      expect(yield* Effect.provide(readAll, layer)).toBe(1_002)
      expect(made.count).toBe(attempts)
      expect(VerifyWorker.hashedSoFar()).toBe(0)
    }))
})
