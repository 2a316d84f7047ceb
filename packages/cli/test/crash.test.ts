// A plan run killed (SIGKILL, the whole process group) in the middle of a step: `artana run --run-id` with the same
// plan continues it from its log. The completed step is not run again, and the step caught in doubt (a
// non-idempotent shell command: it may or may not have happened) is never repeated silently: the run needs
// reconciliation (exit 8), and the report shows it in doubt, until `artana reconcile` settles it as a person says.
import { EventStore, Kernel, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { artana, artanaJson, artanaStarted, cleanup, eventually, loggedEvents, tempDir } from "./helpers.js"

afterAll(cleanup)

const POLICY = `default: deny
tools:
  fs.write: { allow: true, paths: ["workspace/out/**"] }
  shell.run: { allow: true, executables: [sleep], timeout_ms: 600000 }
`

const PLAN = `steps:
  - { id: first, tool: fs.write, args: { path: workspace/out/first.txt, content: "written once" } }
  - { id: slow, tool: shell.run, args: { command: sleep, args: ["30"] } }
  - { id: last, tool: fs.write, args: { path: workspace/out/last.txt, content: "never" } }
`

/**
 * Waits until the `artana` process started in `started` has made the request of step `slow` durable (its
 * `ToolRequested`, written before the command starts): from then on the step is under way, and in doubt if the
 * process dies. A fixed pause would not do: a busy machine takes many seconds to get there.
 */
const slowRequested = (started: ReturnType<typeof artanaStarted>, db: string, tenantId: string, runId: string) => {
  let ended = false
  started.exited.then(() => (ended = true))
  const requested = Effect.map(
    Effect.orElseSucceed(loggedEvents(db, tenantId, runId), () => []),
    (events) => events.some((e) => e.stepKey === "step:slow" && e.payload._tag === "ToolRequested")
  )
  return eventually(
    `run ${runId} logged the request of step slow`,
    180,
    Effect.suspend(() => ended ? Effect.dieMessage(`artana ended before step slow: ${JSON.stringify(started.output())}`) : requested)
  )
}

/** Starts `artana run` of PLAN as `runId` in a new folder and SIGKILLs it (its whole process group) while the `sleep` step runs. */
const killedMidStep = (runId: string) =>
  Effect.gen(function*() {
    const cwd = tempDir()
    fs.mkdirSync(path.join(cwd, "workspace/out"), { recursive: true })
    fs.writeFileSync(path.join(cwd, "policy.yaml"), POLICY)
    fs.writeFileSync(path.join(cwd, "plan.yaml"), PLAN)
    const first = path.join(cwd, "workspace/out/first.txt")
    const db = path.join(cwd, "artana.db")
    const started = artanaStarted(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", runId], { cwd })
    yield* slowRequested(started, db, "default", runId)
    expect(fs.existsSync(first)).toBe(true)
    expect(yield* Effect.promise(() => started.kill())).toBeNull()
    return { cwd, db, first }
  })

describe("a run killed mid-step", () => {
  it.live("continues from its log with --run-id: done steps are not repeated, the step in doubt is not run again", () =>
    Effect.gen(function*() {
      const { cwd, db, first } = yield* killedMidStep("crash-1")
      const firstWrittenAt = fs.statSync(first).mtimeMs

      const again = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "crash-1"], { cwd })
      expect(again.json).toEqual({ runId: "crash-1", status: "needs_reconciliation" })
      expect(again.code).toBe(8)
      expect(fs.statSync(first).mtimeMs).toBe(firstWrittenAt)
      expect(fs.existsSync(path.join(cwd, "workspace/out/last.txt"))).toBe(false)

      const report = yield* artanaJson(["report", "crash-1"], { cwd })
      expect(report.code).toBe(8)
      expect(report.json).toMatchObject({
        status: "needs_reconciliation",
        steps: [{ id: "first", status: "ok" }, { id: "slow", status: "in_doubt", outputHash: null }, { id: "last", status: "skipped" }]
      })
      // Another plan under the same run id is refused, and writes nothing.
      fs.writeFileSync(path.join(cwd, "other.yaml"), PLAN.replace('"30"', '"1"'))
      // What the log holds, read in this process (a command that reads is tested elsewhere; here it would only cost a start).
      const logged = loggedEvents(db, "default", "crash-1")
      const eventCount = Effect.map(logged, (events) => events.length)
      const before = yield* eventCount
      const other = yield* artana(["run", "other.yaml", "--policy", "policy.yaml", "--run-id", "crash-1"], { cwd })
      expect(other.code).toBe(6)
      expect(other.stderr).toContain("the plan does not match the log of run crash-1")
      expect(yield* eventCount).toBe(before)

      // Settling it: the step named must be the one in doubt, with exactly one outcome, a result its tool returns.
      const wrongStep = yield* artana(["reconcile", "crash-1", "--step", "first", "--completed", "{}"], { cwd })
      expect(wrongStep.code).toBe(2)
      expect(wrongStep.stderr).toContain(`"first" is not the step in doubt: run crash-1 waits on step "slow" (shell.run {"command":"sleep","args":["30"]})`)
      const noOutcome = yield* artana(["reconcile", "crash-1", "--step", "slow"], { cwd })
      expect(noOutcome.code).toBe(2)
      expect(noOutcome.stderr).toContain("give exactly one of --completed JSON")
      const notJson = yield* artana(["reconcile", "crash-1", "--step", "slow", "--completed", "{exitCode: 0"], { cwd })
      expect(notJson.code).toBe(2)
      expect(notJson.stderr).toContain("not JSON")
      const wrongShape = yield* artana(["reconcile", "crash-1", "--step", "slow", "--completed", `{"exitCode":0}`], { cwd })
      expect(wrongShape.code).toBe(2)
      expect(wrongShape.stderr).toContain("not a result shell.run returns: the result does not match the tool's result schema at $.signal")
      expect(yield* eventCount).toBe(before)

      // Within shell.run's timeout (10 min: a busy machine takes minutes to get here) of its request, the command may still be running where it started: a person
      // cannot settle it yet, unless they know it stopped (here the whole process group was killed).
      const result = { exitCode: 0, signal: null, stdout: "", stderr: "" }
      const early = yield* artana(["reconcile", "crash-1", "--step", "slow", "--completed", JSON.stringify(result)], { cwd })
      expect(early.code).toBe(8)
      expect(early.stderr).toContain(`the call to tool "shell.run" at step step:slow may still be running`)
      expect(early.stderr).toContain("its timeout (10m 1s) has not passed")
      expect(early.stderr).toContain("artana reconcile --force")
      expect(yield* eventCount).toBe(before)

      // The operator checked: the command finished. The plan then continues after it, and nothing runs twice.
      // A field shell.run does not return is not logged.
      const settled = yield* artanaJson(["reconcile", "crash-1", "--step", "slow", "--force", "--completed", JSON.stringify({ ...result, note: "checked by ann" })], { cwd })
      expect(settled.code).toBe(0)
      expect(settled.json).toEqual({ runId: "crash-1", step: "slow", stepKey: "step:slow", tool: "shell.run", outcome: "completed", status: "running" })
      const twice = yield* artana(["reconcile", "crash-1", "--step", "slow", "--failed", "again"], { cwd })
      expect(twice.code).toBe(2)
      expect(twice.stderr).toContain("run crash-1 is running: only a run in needs_reconciliation has a step to settle")

      const continued = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "crash-1"], { cwd })
      expect(continued.json).toEqual({ runId: "crash-1", status: "completed" })
      expect(continued.code).toBe(0)
      expect(fs.readFileSync(path.join(cwd, "workspace/out/last.txt"), "utf8")).toBe("never")
      expect(fs.statSync(first).mtimeMs).toBe(firstWrittenAt)
      const done = yield* artanaJson(["report", "crash-1"], { cwd })
      expect(done.code).toBe(0)
      expect(done.json).toMatchObject({
        status: "completed",
        steps: [{ id: "first", status: "ok", reconciled: false }, { id: "slow", status: "ok", reconciled: true }, { id: "last", status: "ok", reconciled: false }]
      })
      const shown = yield* artana(["report", "crash-1"], { cwd })
      expect(shown.stdout).toMatch(/slow\s+shell\.run\s+allowed.*\(outcome settled by hand: artana reconcile\)/)
      // The log took the settlement as one more link of its chain; the run's events, in order, say what happened.
      const verified = yield* artanaJson(["verify", "crash-1"], { cwd })
      expect(verified.json).toMatchObject({ ok: true })
      const slowEvents = (yield* logged).filter((e) => e.stepKey === "step:slow")
      expect(slowEvents.map((e) => e.payload._tag)).toEqual(["ToolRequested", "MiddlewareNote", "ReconciliationRequired", "ToolCompleted"])
      expect(slowEvents.flatMap((e) => (e.payload._tag === "ToolCompleted" ? [e.payload.result] : []))).toEqual([result])
    }), 180_000)

  it.live("Ctrl-C during a step: exit 130, the step is in doubt, and the exact `artana reconcile` printed settles it", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      fs.mkdirSync(path.join(cwd, "workspace/out"), { recursive: true })
      fs.writeFileSync(path.join(cwd, "policy.yaml"), POLICY)
      fs.writeFileSync(path.join(cwd, "plan.yaml"), PLAN)
      const db = path.join(cwd, "runs.db")
      const started = artanaStarted(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "int-1", "--db", db, "--tenant", "acme"], { cwd })
      yield* slowRequested(started, db, "acme", "int-1")
      expect(yield* Effect.promise(() => started.interrupt())).toBe(130)
      const { stderr } = started.output()
      expect(stderr).toContain(`interrupted during step slow (shell.run {"command":"sleep","args":["30"]}): the step is in doubt`)
      const printed = stderr.split("\n").map((l) => l.trim()).find((l) => l.startsWith("artana reconcile"))
      expect(printed).toBe(`artana reconcile int-1 --step slow --tenant acme --db ${db} --force (--completed JSON | --failed MESSAGE)`)
      expect(stderr).toContain(`then continue the plan: artana run plan.yaml --policy policy.yaml --run-id int-1 --tenant acme --db ${db}`)

      // Touched while it waits, the run says so, with the command that settles it.
      const replayed = yield* artana(["replay", "int-1", "--db", db, "--tenant", "acme"], { cwd })
      expect(replayed.code).toBe(8)
      expect(replayed.stderr).toContain(`run int-1 needs reconciliation (int-1: step slow (shell.run) in doubt); settle it: artana reconcile int-1 --step slow --tenant acme --db ${db}`)

      const again = yield* artana(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "int-1", "--db", db, "--tenant", "acme"], { cwd })
      expect(again.code).toBe(8)
      expect(again.stdout).toContain(`check what happened, then settle it: artana reconcile int-1 --step slow --tenant acme --db ${db} (--completed JSON | --failed MESSAGE)`)

      // The printed command, as printed, with the outcome the person found.
      const [command, ...rest] = printed!.replace(" (--completed JSON | --failed MESSAGE)", "").split(" ").slice(1)
      const settled = yield* artana([command!, ...rest, "--failed", "stopped by Ctrl-C before it finished"], { cwd })
      expect(settled.code).toBe(0)
      expect(settled.stdout).toContain("step slow of run int-1")
    }), 180_000)

  it.live("a step settled as failed stops the plan there (on_error: stop), and the rest never runs", () =>
    Effect.gen(function*() {
      const { cwd } = yield* killedMidStep("crash-2")
      const stuck = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "crash-2"], { cwd })
      expect(stuck.code).toBe(8)

      const settled = yield* artana(["reconcile", "crash-2", "--step", "slow", "--force", "--failed", "the machine rebooted: the command never finished"], { cwd })
      expect(settled.code).toBe(0)
      expect(settled.stdout).toContain("step slow of run crash-2 (shell.run {\"command\":\"sleep\",\"args\":[\"30\"]}) settled as failed")
      expect(settled.stdout).toContain("artana run PLAN --policy POLICY --run-id crash-2")
      const continued = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "crash-2"], { cwd })
      expect(continued.json).toEqual({ runId: "crash-2", status: "failed" })
      expect(continued.code).toBe(4)
      expect(fs.existsSync(path.join(cwd, "workspace/out/last.txt"))).toBe(false)
      const done = yield* artanaJson(["report", "crash-2"], { cwd })
      expect(done.json).toMatchObject({
        status: "failed",
        steps: [
          { id: "first", status: "ok" },
          { id: "slow", status: "failed", reconciled: true, error: "the machine rebooted: the command never finished" },
          { id: "last", status: "skipped" }
        ]
      })
    }), 180_000)

  it.live("any run in doubt, not only a plan's, is settled by its step key; its own application then continues it", () =>
    Effect.gen(function*() {
      const cwd = tempDir()
      const db = path.join(cwd, "app.db")
      const acme = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 0 })
      let charged = 0
      const charge = Tool.make({
        name: "charge",
        description: "Charges a card (not idempotent)",
        parameters: Schema.Struct({ amount: Schema.Number }),
        success: Schema.Struct({ receipt: Schema.String }),
        handler: () => Effect.zipRight(Effect.sync(() => charged++), Effect.never)
      })
      const billing = Workflow.make({
        name: "billing",
        input: Schema.Struct({ amount: Schema.Number }),
        output: Schema.String,
        run: ({ amount }, ctx) => Effect.map(ctx.tool(charge, { amount }), (r) => r.receipt)
      })
      const app = Layer.provideMerge(
        Kernel.layer({ workflows: [billing] }),
        Layer.mergeAll(SqliteStore.layer({ filename: db }), ScriptedModel.layer([]), ToolRegistry.layer([charge]))
      )
      // The charge is requested and under way when the process stops (here: its fiber is interrupted).
      yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const store = yield* EventStore.EventStore
        const fiber = yield* Effect.fork(kernel.execute(billing, { runId: "bill-1", tenant: acme, input: { amount: 5 } }))
        while (charged === 0) yield* Effect.sleep("10 millis")
        yield* Fiber.interrupt(fiber)
        expect((yield* store.getRun("acme", "bill-1")).status).toBe("running")
        // Recovery finds the charge in doubt and will not repeat it.
        const recovered = yield* kernel.execute(billing, { runId: "bill-1", tenant: acme, input: { amount: 5 } })
        expect(recovered.status).toBe("needs_reconciliation")
      }).pipe(Effect.provide(app))

      const settled = yield* artana(["reconcile", "bill-1", "--db", db, "--tenant", "acme", "--step", "tool:0", "--completed", `{"receipt":"R-77"}`], { cwd })
      expect(settled.code).toBe(0)
      expect(settled.stdout).toContain(`step tool:0 of run bill-1 (charge {"amount":5}) settled as completed`)
      expect(settled.stdout).toContain("continue it with the application that runs its workflow")
      const output = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        return yield* kernel.execute(billing, { runId: "bill-1", tenant: acme, input: { amount: 5 } })
      }).pipe(Effect.provide(app))
      expect(output).toMatchObject({ status: "completed", output: "R-77" })
      expect(charged).toBe(1)
    }), 60_000)
})
