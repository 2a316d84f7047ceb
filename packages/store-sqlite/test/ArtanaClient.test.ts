// The Promise client on a real SQLite file, after a process was SIGKILLed before its run's RunStarted was durable.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { existsSync } from "node:fs"
import { Effect, Schema } from "effect"
import { Artana, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { countLines, lines, makeFixture, paths, tenant } from "./child/workflows.js"
import { baseArgs, killChildren, killedOf, spawnChild, waitForFile, workDir } from "./helpers.js"

afterAll(() => killChildren())

describe("Artana.create on SQLite: a run killed before its RunStarted was durable", () => {
  it.scopedLive("status and resume say it never started, naming how to start it; run starts it and then resume agrees", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "never-started"
      // The child's first append (the run's RunStarted) waits at a barrier that never opens: it is killed there.
      const child = yield* spawnChild([...baseArgs("execute", { db, dir, runId }), "--barrier", "a"])
      yield* waitForFile(paths(dir).ready("a"), child)
      child.kill()
      killedOf(yield* child.exit)
      expect(existsSync(paths(dir).effects)).toBe(false)

      const fixture = makeFixture({ dir })
      const artana = Artana.create({
        store: SqliteStore.layer({ filename: db }),
        model: ScriptedModel.layer([]),
        tools: [fixture.tools.record, fixture.tools.send],
        workflows: [fixture.workflows.crashy]
      })
      yield* Effect.addFinalizer(() => Effect.promise(() => artana.close()))
      const ref = { tenantId: tenant.tenantId, runId }
      const said = yield* Effect.promise(() => Promise.allSettled([artana.status(ref), artana.resume(ref), artana.getRun(ref)]))
      for (const s of said) {
        expect(s.status).toBe("rejected")
        if (s.status !== "rejected") continue
        expect(s.reason).toMatchObject({ _tag: "RunNotFound", runId, tenantId: "acme" })
        expect(String(s.reason.message)).toContain("no run of that id has started")
        expect(String(s.reason.message)).toContain("running its workflow with this id and its input starts it")
      }
      const started = yield* Effect.promise(() => artana.run(fixture.workflows.crashy, { runId, tenant, input: { order: "o-1" } }))
      expect(started.status).toBe("completed")
      // Resume now says what run said: the same run, completed, with the same output; nothing ran twice.
      const resumed = yield* Effect.promise(() => artana.resume(ref))
      expect(resumed).toEqual(started)
      expect(yield* Effect.promise(() => artana.status(ref))).toMatchObject({ status: "completed", runId })
      const events = yield* Effect.promise(() => artana.readEvents(ref))
      expect(events[0]).toMatchObject({ seq: 1, type: "RunStarted" })
      expect(events.filter((e) => e.type === "RunStarted")).toHaveLength(1)
      expect(lines(paths(dir).effects)).toHaveLength(3)
      expect(countLines(paths(dir).effects, `send ${runId}/tool:3`)).toBe(1)
    }), 600_000)
})

class Declined extends Schema.TaggedError<Declined>()("Declined", { reason: Schema.String }) {}

const pay = Workflow.make({
  name: "pay",
  input: Schema.Number,
  output: Schema.String,
  error: Declined,
  run: (amount) => (amount > 100 ? Effect.fail(new Declined({ reason: `${amount} is over 100` })) : Effect.succeed("paid"))
})

describe("Artana.create on SQLite: a workflow's declared error", () => {
  it.scopedLive("a run failed with it fails again with it, typed, when another client resumes it from the file", () =>
    Effect.gen(function*() {
      const { db } = yield* workDir
      const open = () => Artana.create({ store: SqliteStore.layer({ filename: db }), model: ScriptedModel.layer([]), workflows: [pay] })
      const first = open()
      const failed = yield* Effect.promise(() => first.run(pay, { runId: "p-1", tenant, input: 250 }).catch((e: unknown) => e))
      yield* Effect.promise(() => first.close())
      expect(failed).toBeInstanceOf(Declined)
      const second = open()
      yield* Effect.addFinalizer(() => Effect.promise(() => second.close()))
      const again = yield* Effect.promise(() => second.resume({ tenantId: tenant.tenantId, runId: "p-1" }).catch((e: unknown) => e))
      expect(again).toBeInstanceOf(Declined)
      expect(again).toEqual(failed)
      expect(yield* Effect.promise(() => second.status({ tenantId: tenant.tenantId, runId: "p-1" }))).toEqual({
        status: "failed",
        runId: "p-1",
        errorTag: "Declined",
        error: failed instanceof Error ? failed.message : "",
        encoded: { _tag: "Declined", reason: "250 is over 100" }
      })
    }))
})
