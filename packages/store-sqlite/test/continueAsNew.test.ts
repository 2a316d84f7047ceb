// Continue-as-new across crashes, on a real SQLite file with real processes: a process SIGKILLed before a handover,
// or right after it, and a new process that resumes the chain by its first run's id. Exactly one successor per
// handover, and no step or side effect twice. Child programs: test/child/ (workflow "chained").
import { afterAll, describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { Event, EventStore } from "@artana/core"
import { CHAIN_PAGES, countLines, type Killer, lines, paths, tenant } from "./child/workflows.js"
import { baseArgs, inProcess, inspectRun, killChildren, killedOf, resultOf, runChild, spawnChild, waitForFile, workDir } from "./helpers.js"

afterAll(() => killChildren())

const TIMEOUT = 600_000

interface HandoverCase {
  readonly label: string
  readonly killer: Killer
  readonly where: string
  /** The runs of the chain when the process died, each with its status. */
  readonly atCrash: ReadonlyArray<string>
}

const CASES: ReadonlyArray<HandoverCase> = [
  { label: "page:0:handover", killer: "self", where: "before the first handover commit", atCrash: ["chain:running"] },
  { label: "page:1:start", killer: "self", where: "right after the first handover commit", atCrash: ["chain:continued", "chain::continued::1:running"] },
  {
    label: "page:1:handover",
    killer: "parent",
    where: "in the successor, before the second handover",
    atCrash: ["chain:continued", "chain::continued::1:running"]
  },
  {
    label: "page:2:start",
    killer: "parent",
    where: "right after the second handover commit",
    atCrash: ["chain:continued", "chain::continued::1:continued", "chain::continued::2:running"]
  }
]

const chainOf = (dir: string, db: string) =>
  inProcess(dir, db, () =>
    Effect.map(EventStore.EventStore, (store) => store).pipe(
      Effect.flatMap((store) => store.listRuns(tenant.tenantId, { rootRunId: "chain" })),
      Effect.map((runs) => runs.map((r) => `${r.runId}:${r.status}`).sort())
    ))

describe.concurrent("continue-as-new: a SIGKILLed process, a new process resumes the chain", () => {
  it.scopedLive.each(CASES)("killed by $killer at $label ($where)", (c) =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const files = paths(dir)
      const ids = Array.from({ length: CHAIN_PAGES }, (_, i) => (i === 0 ? "chain" : Event.continuedRunId("chain", i)))
      const execute = [...baseArgs("execute", { db, dir, runId: "chain" }), "--workflow", "chained"]

      // 1. The first process dies at the crash point.
      const first = yield* spawnChild([...execute, "--crash-at", c.label, "--killer", c.killer])
      if (c.killer === "parent") {
        yield* waitForFile(files.crashMarker, first)
        expect(readFileSync(files.crashMarker, "utf8")).toBe(c.label)
        first.kill()
      }
      killedOf(yield* first.exit)
      expect(yield* chainOf(dir, db)).toEqual([...c.atCrash].sort())
      for (const id of c.atCrash.map((r) => r.slice(0, r.lastIndexOf(":")))) {
        expect((yield* inspectRun(dir, db, id)).report.ok).toBe(true)
      }

      // 2. A new process resumes the chain by its first run's id: it goes on where the work is, once.
      const resumed = resultOf(yield* runChild(baseArgs("resume", { db, dir, runId: "chain" })))
      const done = { status: "completed", runId: ids[CHAIN_PAGES - 1], output: 1 + 2 + 3 }
      expect(resumed).toEqual(done)

      // Exactly one successor per handover: the chain is its three runs, each verified, each started once.
      expect(yield* chainOf(dir, db)).toEqual(ids.map((id, i) => `${id}:${i < CHAIN_PAGES - 1 ? "continued" : "completed"}`).sort())
      for (const [i, id] of ids.entries()) {
        const run = yield* inspectRun(dir, db, id)
        expect(run.report).toMatchObject({ ok: true, events: run.events.length })
        const types = run.events.map((e) => e.type)
        expect(types.filter((t) => t === "RunStarted")).toHaveLength(1)
        expect(types[types.length - 1]).toBe(i < CHAIN_PAGES - 1 ? "RunContinued" : "RunCompleted")
        expect(run.events.filter((e) => e.stepKey === "step:0").map((e) => e.type)).toEqual(["StepCompleted"])
        expect(run.events.filter((e) => e.stepKey === "tool:1").map((e) => e.type)).toEqual(["ToolRequested", "ToolCompleted"])
        if (i > 0) expect(run.events[0]!.payload).toMatchObject({ continuedFrom: { runId: ids[i - 1], chainRunId: "chain", generation: i } })
        // Every page's step and side effect ran once.
        expect(countLines(files.steps, `step work:${i}`)).toBe(1)
        expect(countLines(files.effects, `record ${id}/tool:1`)).toBe(1)
      }
      expect(lines(files.effects)).toHaveLength(CHAIN_PAGES)
      expect(lines(files.steps)).toHaveLength(CHAIN_PAGES)

      // 3. Running the first run's id again, in yet another process, returns the chain's result and runs nothing.
      expect(resultOf(yield* runChild(execute))).toEqual(done)
      expect(lines(files.effects)).toHaveLength(CHAIN_PAGES)
      expect(lines(files.steps)).toHaveLength(CHAIN_PAGES)
    }), TIMEOUT)
})
