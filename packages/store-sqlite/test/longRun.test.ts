// A run of 200,000 events, resumed in a process whose heap is capped far below what holding its log takes: the
// kernel reads a run a page at a time, so its memory does not grow with the run's length.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { fileURLToPath } from "node:url"
import { Effect, Layer } from "effect"
import { EventStore, Kernel, ModelPort, ToolRegistry } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { killChildren, lastJsonLine as lastLine, runChild, workDir } from "./helpers.js"
import { tenant } from "./child/workflows.js"

const LONG_RUN = fileURLToPath(new URL("./child/long-run.ts", import.meta.url))
const STEPS = 200_000
/**
 * The resuming process's heap, in MB. Holding the log of 200,000 events takes more than 128 MB of heap (the kernel
 * that read a run whole died at 128 MB: "JavaScript heap out of memory"); one page of it and the kernel fit in 64.
 */
const HEAP_MB = 64
// Under load (2 cores shared), writing and resuming 200,000 events takes minutes.
const TIMEOUT = 900_000

afterAll(killChildren)

const noModel = ModelPort.make({ defaultModel: "none", generate: () => Effect.dieMessage("a long run calls no model") })
const kernelOn = (db: string) =>
  Layer.provideMerge(
    Kernel.layer({ workflows: [TestLog.LongRun.workflow] }),
    Layer.mergeAll(SqliteStore.layer({ filename: db }), Layer.succeed(ModelPort.ModelPort, noModel), ToolRegistry.layer([]))
  )

describe("a long run", () => {
  it.scopedLive(`paused after ${STEPS} steps, resumes in a process with a ${HEAP_MB} MB heap and completes; its status is read so too`, () =>
    Effect.gen(function*() {
      const { db } = yield* workDir
      const runId = "long"
      // Written fast, in large batches with a valid chain (TestLog.LongRun.write), in a process of its own.
      lastLine(yield* runChild(["write", db, runId, String(STEPS)], TIMEOUT, { script: LONG_RUN }))
      // Where it stands, read in a process with the same capped heap: its record and its pause, not its log.
      const statusOf = () => runChild(["status", db, runId, String(STEPS)], TIMEOUT, { script: LONG_RUN, nodeArgs: [`--max-old-space-size=${HEAP_MB}`] })
      expect(lastLine(yield* statusOf())).toMatchObject({ outcome: "result", result: { status: "paused", runId, ticket: `${runId}-ticket`, reason: "approve the sum" } })
      const resumed = lastLine(
        yield* runChild(["resume", db, runId, String(STEPS)], TIMEOUT, { script: LONG_RUN, nodeArgs: [`--max-old-space-size=${HEAP_MB}`] })
      )
      expect(resumed).toMatchObject({
        outcome: "result",
        result: { status: "completed", runId, output: { sum: TestLog.LongRun.sumOf(STEPS), response: "approved" } }
      })
      // The log holds the whole run: its start, every step, the pause, the response and the completion, and verifies.
      const { info, report } = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const info = yield* (yield* EventStore.EventStore).getRun(tenant.tenantId, runId)
        return { info, report: yield* kernel.verify({ tenantId: tenant.tenantId, runId }) }
      }).pipe(Effect.provide(kernelOn(db)))
      expect(lastLine(yield* statusOf())).toMatchObject({ outcome: "result", result: { status: "completed", runId, output: { sum: TestLog.LongRun.sumOf(STEPS), response: "approved" } } })
      expect(info).toMatchObject({ status: "completed", headSeq: STEPS + 4 })
      expect(report).toMatchObject({ ok: true, events: STEPS + 4 })
    }), TIMEOUT)
})
