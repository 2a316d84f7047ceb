// A long run replayed (`kernel.replay`) and its chain checked (`Kernel.verify`), each in a process whose heap is
// capped far below what holding the run's log takes: both read the log a page at a time, so their memory does not
// grow with the run's length. The run is written once for the file (fast, in bulk, with a valid chain).
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { killChildren, lastJsonLine, runChild } from "./helpers.js"

const LONG_RUN = fileURLToPath(new URL("./child/long-run.ts", import.meta.url))
const STEPS = 200_000
/**
 * The heap of the processes that replay and verify, in MB: holding the log of 200,000 events takes more than that
 * (a replay or a verify that read the run whole died of "JavaScript heap out of memory" here); a page of it fits.
 */
const HEAP_MB = 64
// Under load (2 cores shared), writing and replaying 200,000 events takes minutes.
const TIMEOUT = 900_000
const runId = "long"

let dir = ""
let db = ""
const capped = (command: "replay" | "verify") =>
  Effect.map(runChild([command, db, runId, String(STEPS)], TIMEOUT, { script: LONG_RUN, nodeArgs: [`--max-old-space-size=${HEAP_MB}`] }), lastJsonLine)

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "artana-long-replay-"))
  db = join(dir, "artana.db")
  // Written in a process of its own, as `TestLog.LongRun.write` writes it: a run paused after its steps.
  await Effect.runPromise(Effect.scoped(Effect.map(runChild(["write", db, runId, String(STEPS)], TIMEOUT, { script: LONG_RUN }), lastJsonLine)))
}, TIMEOUT)

afterAll(() => {
  killChildren()
  if (dir !== "") rmSync(dir, { recursive: true, force: true })
})

describe(`a run paused after ${STEPS} steps, read by a process with a ${HEAP_MB} MB heap`, () => {
  it.scopedLive("is replayed to its pause", () =>
    Effect.gen(function*() {
      expect(yield* capped("replay")).toMatchObject({
        outcome: "result",
        result: { status: "paused", runId, ticket: `${runId}-ticket`, reason: "approve the sum" }
      })
    }), TIMEOUT)

  it.scopedLive("has its whole chain checked by Kernel.verify", () =>
    Effect.gen(function*() {
      expect(yield* capped("verify")).toMatchObject({ outcome: "result", result: { runId, ok: true, events: STEPS + 2, headSeq: STEPS + 2 } })
    }), TIMEOUT)
})
