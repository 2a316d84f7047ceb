// `artana signal`: a durable message into a run, from a child process running the real command against a SQLite file
// the test drives through the kernel: delivered to a paused run, which takes it once resumed; refused once it ended.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Kernel, Workflow } from "@artana/core"
import { Effect, Schema } from "effect"
import * as path from "node:path"
import { artana, cleanup, sqliteKernel, tempDir, tenant } from "./helpers.js"

afterAll(cleanup)

/** Pauses, then waits for a "decision". */
const decide = Workflow.make({
  name: "decide",
  input: Schema.Null,
  output: Schema.String,
  run: (_input, ctx) =>
    Effect.gen(function*() {
      yield* ctx.pauseForHuman({ reason: "look first" })
      const d = yield* Effect.orDie(ctx.waitForSignal("decision", Schema.Struct({ approve: Schema.Boolean }), { timeout: 0 }))
      return d.approve ? "approved" : "declined"
    })
})

const inKernel = <A, E>(db: string, f: (kernel: Kernel.Service) => Effect.Effect<A, E>) =>
  Effect.flatMap(Kernel.Kernel, f).pipe(Effect.provide(sqliteKernel(db)))

describe("artana signal", () => {
  it.live("delivers a signal the run takes when it gets to its wait; a run that ended refuses one; bad input writes nothing", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const db = path.join(dir, "runs.db")
      const paused = yield* inKernel(db, (k) => k.execute(decide, { runId: "d-1", tenant: tenant("acme"), input: null }))
      expect(paused.status).toBe("paused")

      const badJson = yield* artana(["signal", "d-1", "decision", "--payload", "{approve", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(badJson.code).toBe(2)
      expect(badJson.stderr).toMatch(/--payload/)
      const otherTenant = yield* artana(["signal", "d-1", "decision", "--payload", "{}", "--db", db, "--tenant", "globex"], { cwd: dir })
      expect(otherTenant.code).toBe(5)

      const sent = yield* artana(["signal", "d-1", "decision", "--payload", `{"approve":true}`, "--db", db, "--tenant", "acme", "--format", "json"], { cwd: dir })
      expect(sent.code).toBe(0)
      expect(JSON.parse(sent.stdout)).toMatchObject({ runId: "d-1", name: "decision", seq: 3, signalId: expect.any(String) })

      const done = yield* inKernel(db, (k) => k.resume({ tenantId: "acme", runId: "d-1", workflow: decide }))
      expect(done).toEqual({ status: "completed", runId: "d-1", output: "approved" })

      const refused = yield* artana(["signal", "d-1", "decision", "--payload", `{"approve":false}`, "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(refused.code).toBe(2)
      expect(refused.stderr).toMatch(/run d-1 is completed: signal "decision" was refused/)
      const events = yield* inKernel(db, (k) => k.readEvents({ tenantId: "acme", runId: "d-1" }))
      expect(events.map((e) => e.type)).toEqual(["RunStarted", "PauseRequested", "SignalSent", "HumanResponded", "SignalReceived", "RunCompleted"])

      const shown = yield* artana(["show-run", "d-1", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(shown.code).toBe(0)
      expect(shown.stdout).toMatch(/SignalSent.*decision: \{"approve":true\}/)
    }), 120_000)

  it.live("--id: the same id sent twice is delivered once; the second send says so", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const db = path.join(dir, "runs.db")
      expect((yield* inKernel(db, (k) => k.execute(decide, { runId: "d-2", tenant: tenant("acme"), input: null }))).status).toBe("paused")
      const send = (format: ReadonlyArray<string>) =>
        artana(["signal", "d-2", "decision", "--payload", `{"approve":true}`, "--id", "hook-7", "--db", db, "--tenant", "acme", ...format], { cwd: dir })
      const first = yield* send(["--format", "json"])
      expect(first.code).toBe(0)
      expect(JSON.parse(first.stdout)).toMatchObject({ signalId: "hook-7", seq: 3, duplicate: false })
      const again = yield* send([])
      expect(again.code).toBe(0)
      expect(again.stdout).toMatch(/of id hook-7 was already delivered to run d-2 \(seq 3\): not sent again/)
      const events = yield* inKernel(db, (k) => k.readEvents({ tenantId: "acme", runId: "d-2" }))
      expect(events.filter((e) => e.type === "SignalSent")).toHaveLength(1)
    }), 120_000)
})
