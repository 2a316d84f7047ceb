// The commands that only read (list-runs, show-run, report, verify), run as real child processes against a
// SQLite file written in-process through the kernel.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { Event} from "@artana/core";
import { Chat, Errors, EventStore, Json, Kernel, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel, TestLog } from "@artana/core/testing"
import { Plan, PlanRunner } from "@artana/cli"
import { SqliteStore } from "@artana/store-sqlite"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { artana, artanaJson, artanaPipedToSlowReader, artanaTty, cleanup, greet, sqliteKernel, tempDir, tenant } from "./helpers.js"

afterAll(cleanup)

const plan = (text: string) => Either.getOrThrow(Plan.parse(text, { file: "plan.yaml" }))

const BIG_TEXT = "0123456789abcdef".repeat(3 * 65_536)

let dir = ""
let db = ""
const acme = tenant("acme")

beforeAll(async () => {
  dir = tempDir()
  db = path.join(dir, "runs.db")
  await Effect.runPromise(Effect.gen(function*() {
    yield* PlanRunner.run({ runId: "plan-ok", tenant: acme, input: { plan: plan("steps:\n  - { id: hello, tool: echo, args: { text: hi } }\n  - { id: world, tool: echo, args: { text: there } }\n") } })
    yield* PlanRunner.run({ runId: "plan-denied", tenant: acme, input: { plan: plan("steps:\n  - { id: a, tool: echo, args: { text: x } }\n  - { id: b, tool: secret }\n  - { id: c, tool: echo, args: { text: never } }\n") } })
    yield* PlanRunner.run({ runId: "plan-continue", tenant: acme, input: { plan: plan("on_error: continue\nsteps:\n  - { id: a, tool: boom }\n  - { id: b, tool: secret }\n  - { id: c, tool: echo, args: { text: y } }\n") } })
    const kernel = yield* Kernel.Kernel
    yield* kernel.execute(greet, { runId: "root", tenant: acme, input: { name: "root" } })
    yield* kernel.execute(greet, { runId: "child-a", tenant: acme, input: { name: "a" }, parentRunId: "root" })
    yield* kernel.execute(greet, { runId: "grand", tenant: acme, input: { name: "g" }, parentRunId: "child-a" })
    yield* kernel.execute(greet, { runId: "child-b", tenant: acme, input: { name: "b" }, parentRunId: "root" })
    yield* kernel.execute(greet, { runId: "other", tenant: tenant("globex"), input: { name: "o" } })
    // A report of several megabytes (a 3 MiB argument), for programs reading `--format json` through a pipe.
    const small = plan("steps:\n  - { id: big, tool: echo, args: { text: x } }\n  - { id: no, tool: secret }\n")
    const big = { ...small, steps: small.steps.map((step) => step.id === "big" ? { ...step, args: { text: BIG_TEXT } } : step) }
    yield* PlanRunner.run({ runId: "plan-big", tenant: tenant("bulk"), input: { plan: big } })
  }).pipe(Effect.provide(sqliteKernel(db))))
}, 60_000)

describe("artana list-runs", () => {
  it.live("lists the tenant's runs only, newest first, as JSON and as an aligned table", () =>
    Effect.gen(function*() {
      const all = yield* artanaJson(["list-runs", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(all.code).toBe(0)
      const runs = (all.json as { runs: ReadonlyArray<Event.RunInfo> }).runs
      expect(runs.map((r) => r.runId).sort()).toEqual(["child-a", "child-b", "grand", "plan-continue", "plan-denied", "plan-ok", "root"])
      expect(runs.find((r) => r.runId === "plan-denied")).toMatchObject({ status: "failed", workflow: "artana.plan", tenantId: "acme" })
      const failed = yield* artanaJson(["list-runs", "--db", db, "--tenant", "acme", "--status", "failed"], { cwd: dir })
      expect((failed.json as { runs: ReadonlyArray<Event.RunInfo> }).runs.map((r) => r.runId)).toEqual(["plan-denied"])
      const plans = yield* artanaJson(["list-runs", "--db", db, "--tenant", "acme", "--workflow", "artana.plan", "--limit", "2"], { cwd: dir })
      expect((plans.json as { runs: ReadonlyArray<Event.RunInfo> }).runs).toHaveLength(2)

      const table = yield* artana(["list-runs", "--tenant", "globex"], { cwd: dir, env: { ARTANA_DB: db } })
      expect(table.code).toBe(0)
      const lines = table.stdout.trim().split("\n")
      expect(lines[0]).toMatch(/^RUN\s+WORKFLOW\s+STATUS\s+EVENTS\s+COST\s+CREATED\s+TOOK\s+PARENT$/)
      expect(lines[1]).toMatch(/^other\s+greet\s+✓ completed\s+\d+\s+\$0\.0000\s+\d{4}-\d\d-\d\dT/)
      // Aligned: the STATUS column starts at the same offset in the header and in the row.
      expect(lines[1]!.indexOf("✓")).toBe(lines[0]!.indexOf("STATUS"))
      expect(table.stdout).not.toContain("\u001b[")

      // No runs for the tenant given (a typo, or the wrong --tenant): the tenants that have runs here are named.
      const none = yield* artana(["list-runs", "--db", db, "--tenant", "acme-corp"], { cwd: dir })
      expect(none.code).toBe(0)
      expect(none.stdout.trim().split("\n")).toEqual([
        "no runs for tenant acme-corp",
        `tenants with runs in ${db}: acme (7), bulk (1), globex (1)`,
        `  artana list-runs --tenant acme --db ${db}`
      ])
      const noneJson = yield* artanaJson(["list-runs", "--db", db, "--tenant", "acme-corp"], { cwd: dir })
      expect(noneJson.json).toEqual({ tenantId: "acme-corp", runs: [], next: null, tenantsWithRuns: [{ tenantId: "acme", runs: 7 }, { tenantId: "bulk", runs: 1 }, { tenantId: "globex", runs: 1 }] })
    }))

  it.live("colours on a terminal only: none through a pipe (unless FORCE_COLOR), none under NO_COLOR", () =>
    Effect.gen(function*() {
      const tty = yield* artanaTty(["list-runs", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(tty.code).toBe(0)
      expect(tty.stdout).toContain("\u001b[32m✓")
      const noColor = yield* artanaTty(["list-runs", "--db", db, "--tenant", "acme"], { cwd: dir, env: { NO_COLOR: "1" } })
      expect(noColor.code).toBe(0)
      expect(noColor.stdout).toContain("✓ completed")
      expect(noColor.stdout).not.toContain("\u001b[")
      const forced = yield* artana(["list-runs", "--db", db, "--tenant", "acme"], { cwd: dir, env: { FORCE_COLOR: "1" } })
      expect(forced.stdout).toContain("\u001b[32m✓")
      const help = yield* artana(["--help"], { cwd: dir })
      expect(help.code).toBe(0)
      expect(help.stdout).toContain("list-runs")
      expect(help.stdout).not.toContain("\u001b[")
    }))
})

describe("runs of another version of their workflow's code", () => {
  it.live("list-runs shows them as WORKFLOW@VERSION, and show-run names the version", () =>
    Effect.gen(function*() {
      const versioned = path.join(dir, "versioned.db")
      yield* Effect.flatMap(EventStore.EventStore, (store) =>
        Effect.forEach([["old-run", undefined], ["new-run", "2"]] as const, ([runId, version]) =>
          store.append({
            runId,
            tenantId: "acme",
            expectedSeq: 0,
            events: TestLog.chain(runId, "acme", [], [{ _tag: "RunStarted", workflow: "greet", input: null, tenant: tenant("acme"), ...(version === undefined ? {} : { version }) }])
          }))).pipe(Effect.provide(SqliteStore.layer({ filename: versioned })))
      const listed = yield* artana(["list-runs", "--db", versioned, "--tenant", "acme"], { cwd: dir })
      expect(listed.code, listed.stderr).toBe(0)
      const row = (runId: string) => listed.stdout.split("\n").find((l) => l.startsWith(runId))?.split(/\s+/)[1]
      expect(row("new-run")).toBe("greet@2")
      expect(row("old-run")).toBe("greet")
      expect((yield* artana(["show-run", "new-run", "--db", versioned, "--tenant", "acme"], { cwd: dir })).stdout).toMatch(/workflow {2}greet {3}version 2/)
    }))
})

describe("text from a run's log in the terminal", () => {
  it.live("show-run prints a tool's escape sequences and bidirectional controls as escapes, not obeyed", () =>
    Effect.gen(function*() {
      const file = path.join(dir, "escapes.db")
      // A tool's error (a fetched page's text, say) that would clear the screen and turn the rest of the line around.
      const error = "boom\u001b[2J\u001b]0;pwned\u0007 \u202eevil"
      yield* Effect.flatMap(EventStore.EventStore, (store) =>
        store.append({
          runId: "esc",
          tenantId: "acme",
          expectedSeq: 0,
          events: TestLog.chain("esc", "acme", [], [
            { _tag: "RunStarted", workflow: "greet", input: null, tenant: tenant("acme") },
            { _tag: "ToolFailed", tool: "fetch", kind: "tool_error", error }
          ])
        })).pipe(Effect.provide(SqliteStore.layer({ filename: file })))
      const shown = yield* artana(["show-run", "esc", "--db", file, "--tenant", "acme"], { cwd: dir })
      expect(shown.code, shown.stderr).toBe(0)
      for (const raw of ["\u001b", "\u0007", "\u202e"]) expect(shown.stdout).not.toContain(raw)
      expect(shown.stdout).toContain("fetch tool_error: boom\\u001b[2J\\u001b]0;pwned\\u0007 \\u202eevil")
    }))
})

describe("artana show-run", () => {
  it.live("shows the run, its lineage tree (parent and child runs) and its events", () =>
    Effect.gen(function*() {
      const shown = yield* artana(["show-run", "child-a", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(shown.code).toBe(0)
      const out = shown.stdout
      expect(out).toContain("run child-a")
      expect(out).toContain("workflow  greet")
      const tree = out.slice(out.indexOf("lineage"), out.indexOf("events\n"))
      expect(tree.split("\n").filter((l) => l.trim() !== "").slice(1).map((l) => l.replace(/\s+greet\s+completed/, "").trimEnd())).toEqual([
        "  ✓ root",
        "  ├─ ✓ child-a  ◀ this run",
        "  │  └─ ✓ grand",
        "  └─ ✓ child-b"
      ])
      expect(out).toMatch(/SEQ\s+AT\s+STEP\s+EVENT\s+DETAIL/)
      expect(out).toMatch(/1\s+\+\d+ ms\s+run\s+RunStarted\s+greet \(child of root\)/)
      expect(out).toMatch(/ToolRequested\s+echo \{"text":"a"\}/)

      const json = yield* artanaJson(["show-run", "grand", "--db", db, "--tenant", "acme"], { cwd: dir })
      const shape = json.json as { run: Event.RunInfo; lineage: unknown; events: ReadonlyArray<Event.Event> }
      expect(shape.run).toMatchObject({ runId: "grand", parentRunId: "child-a", rootRunId: "root" })
      expect(shape.lineage).toEqual({
        runId: "root", workflow: "greet", status: "completed", children: [
          { runId: "child-a", workflow: "greet", status: "completed", children: [{ runId: "grand", workflow: "greet", status: "completed", children: [] }] },
          { runId: "child-b", workflow: "greet", status: "completed", children: [] }
        ]
      })
      expect(shape.events.map((e) => e.type)).toEqual(["RunStarted", "ToolRequested", "ToolCompleted", "RunCompleted"])
    }))

  it.live("the cost line shows the run's own spend and its lineage's, which the root's budget is charged", () =>
    Effect.gen(function*() {
      const priced = path.join(tempDir(), "priced.db")
      const funded = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 10 })
      const ask = Workflow.make({
        name: "ask",
        input: Schema.Struct({ q: Schema.String }),
        output: Schema.String,
        run: ({ q }, ctx) => Effect.map(ctx.chat({ messages: [Chat.user(q)] }), (r) => r.output)
      })
      const layer = Layer.provideMerge(
        Kernel.layer(),
        Layer.mergeAll(
          SqliteStore.layer({ filename: priced }),
          ScriptedModel.layer([ScriptedModel.text("a", { costUsd: 0.25 }), ScriptedModel.text("b", { costUsd: 0.5 })]),
          ToolRegistry.layer([])
        )
      )
      yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        yield* kernel.execute(ask, { runId: "spend-root", tenant: funded, input: { q: "root" } })
        yield* kernel.execute(ask, { runId: "spend-child", tenant: funded, input: { q: "child" }, parentRunId: "spend-root" })
      }).pipe(Effect.provide(layer))

      const shown = yield* artana(["show-run", "spend-child", "--db", priced, "--tenant", "acme"], { cwd: dir })
      expect(shown.code).toBe(0)
      expect(shown.stdout).toMatch(/cost\s+\$0\.500000 this run\s+\$0\.750000 its tree of 2 runs \(charged to the root's budget\)/)
      const json = yield* artanaJson(["show-run", "spend-root", "--db", priced, "--tenant", "acme"], { cwd: dir })
      expect(json.json).toMatchObject({ run: { runId: "spend-root", costUsd: 0.25 }, lineageCostUsd: 0.75 })
      // A tree of runs without model calls costs nothing; a run alone in its lineage shows one figure.
      const alone = yield* artana(["show-run", "root", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(alone.stdout).toMatch(/cost\s+\$0\.000000 this run\s+\$0\.000000 its tree of 4 runs/)
      const plan = yield* artana(["show-run", "plan-ok", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(plan.stdout).toMatch(/cost\s+\$0\.000000\n/)
    }))

  it.live("another tenant's run is not found (exit 5)", () =>
    Effect.gen(function*() {
      const r = yield* artana(["show-run", "other", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(r.code).toBe(5)
      expect(r.stdout).toBe("")
      expect(r.stderr).toContain("run other not found for tenant acme")
    }))
})

describe("a lineage waiting on a run in doubt", () => {
  // root -> mid -> leaf, each parent's tool running its child as a sub-agent does; the leaf's non-idempotent charge
  // is caught in doubt (its execution stopped after the side effect, before the outcome), so all three wait.
  it.live("list-runs and show-run show the root waiting, with the path down to the step that needs a person", () =>
    Effect.gen(function*() {
      const waitDir = tempDir()
      const waitDb = path.join(waitDir, "wait.db")
      let crash = true
      const charge = Tool.make({
        name: "charge",
        description: "charges",
        parameters: Schema.Struct({}),
        handler: () => (crash ? Effect.interrupt : Effect.succeed(5))
      })
      const leaf = Workflow.make({ name: "leaf", input: Schema.Null, output: Schema.Number, run: (_input, ctx) => ctx.tool(charge, {}) })
      const delegating = (kernel: Kernel.Service, name: string, child: Workflow.Workflow<null, number, unknown>) =>
        Tool.make({
          name,
          description: `runs ${child.name}`,
          parameters: Schema.Struct({}),
          success: Schema.Number,
          idempotent: true,
          handler: (_args, ctx) =>
            Effect.gen(function*() {
              const childId = `${ctx.runId}>${name}`
              const result = yield* kernel.execute(child, { runId: childId, tenant: ctx.tenant, parentRunId: ctx.runId, input: null })
              if (result.status === "needs_reconciliation") {
                return yield* new Errors.WaitingOnRun({ runId: childId, stepKey: result.stepKey, tool: result.tool, waitingOn: result.waitingOn })
              }
              return result.status === "completed" ? result.output : yield* Effect.fail(`child ${result.status}`)
            })
        })
      yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const mid = Workflow.make({ name: "mid", input: Schema.Null, output: Schema.Number, run: (_input, ctx) => ctx.tool(delegating(kernel, "to_leaf", leaf), {}) })
        const root = Workflow.make({ name: "root", input: Schema.Null, output: Schema.Number, run: (_input, ctx) => ctx.tool(delegating(kernel, "to_mid", mid), {}) })
        yield* Effect.exit(kernel.execute(root, { runId: "boss", tenant: acme, input: null }))
        crash = false
        expect((yield* kernel.execute(root, { runId: "boss", tenant: acme, input: null })).status).toBe("needs_reconciliation")
      }).pipe(Effect.provide(sqliteKernel(waitDb)))
      const midId = "boss>to_mid"
      const leafId = "boss>to_mid>to_leaf"
      const path3 = [
        { runId: "boss", stepKey: "tool:0", tool: "to_mid" },
        { runId: midId, stepKey: "tool:0", tool: "to_leaf" },
        { runId: leafId, stepKey: "tool:0", tool: "charge" }
      ]

      const table = yield* artana(["list-runs", "--db", waitDb, "--tenant", "acme"], { cwd: waitDir })
      expect(table.code).toBe(0)
      const lines = table.stdout.split("\n")
      expect(lines.find((l) => l.startsWith("boss "))).toMatch(/^boss\s+root\s+\S+ needs_reconciliation/)
      // One entry, for the topmost waiting run: the path from it, run by run, to the step in doubt, and what to do.
      const waiting = table.stdout.slice(table.stdout.indexOf("waiting for a person"))
      expect(waiting.split("\n").filter((l) => l.trim() !== "").map((l) => l.trim())).toEqual([
        "waiting for a person",
        `? boss → ${midId} → ${leafId}: step tool:0 (charge) in doubt`,
        `settle it: artana reconcile '${leafId}' --step tool:0 --tenant acme --db ${waitDb} (--completed JSON | --failed MESSAGE), then resume boss with the application that runs its workflow`
      ])
      const listed = yield* artanaJson(["list-runs", "--db", waitDb, "--tenant", "acme"], { cwd: waitDir })
      const runs = (listed.json as { runs: ReadonlyArray<Event.RunInfo & { reconciliationPath?: unknown }> }).runs
      expect(Object.fromEntries(runs.map((r) => [r.runId, r.reconciliationPath]))).toEqual({ boss: path3, [midId]: path3.slice(1), [leafId]: path3.slice(2) })

      const shown = yield* artana(["show-run", "boss", "--db", waitDb, "--tenant", "acme"], { cwd: waitDir })
      expect(shown.code).toBe(0)
      expect(shown.stdout).toContain(`waits on  boss → ${midId} → ${leafId}: step tool:0 (charge) in doubt`)
      expect(shown.stdout).toContain(`settle it: artana reconcile '${leafId}' --step tool:0 --tenant acme --db ${waitDb} (--completed JSON | --failed MESSAGE), then resume boss`)
      expect(shown.stdout).toMatch(/ReconciliationRequired\s+to_mid waits on run boss>to_mid/)
      const json = yield* artanaJson(["show-run", midId, "--db", waitDb, "--tenant", "acme"], { cwd: waitDir })
      expect(json.json).toMatchObject({ run: { runId: midId, status: "needs_reconciliation" }, reconciliationPath: path3.slice(1) })
    }))
})

describe("artana report", () => {
  it.live("JSON: every step with its decision, reason, status and hashes; the summary; exit 3 for a denial", () =>
    Effect.gen(function*() {
      const r = yield* artanaJson(["report", "plan-continue", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(r.code).toBe(3)
      const report = r.json as {
        runId: string
        status: string
        steps: ReadonlyArray<{ id: string; tool: string; decision: string; reason: string; status: string; inputHash: string; outputHash: string }>
        summary: { steps: number; ok: number; denied: number; failed: number; skipped: number; denials: ReadonlyArray<unknown>; costUsd: number; durationMs: number }
      }
      expect(report).toMatchObject({ runId: "plan-continue", status: "completed" })
      expect(report.steps.map((s) => [s.id, s.tool, s.decision, s.status])).toEqual([
        ["a", "boom", "allowed", "failed"],
        ["b", "secret", "denied", "denied"],
        ["c", "echo", "allowed", "ok"]
      ])
      expect(report.steps[1]!.reason).toBe("secret is not allowed (test-policy)")
      expect(report.steps[2]).toMatchObject({ inputHash: Json.hash({ text: "y" }), outputHash: Json.hash({ echoed: "y" }) })
      expect(report.steps[0]!.outputHash).toBe(PlanRunner.outputHash({ ok: false, kind: "tool_error", error: "exploded" }))
      expect(report.summary).toMatchObject({ steps: 3, ok: 1, denied: 1, failed: 1, skipped: 0, costUsd: 0, denials: [{ id: "b", tool: "secret", reason: "secret is not allowed (test-policy)" }] })
      expect(report.summary.durationMs).toBeGreaterThanOrEqual(0)
    }))

  it.live("a stopped run shows the steps it never reached as skipped; console form with icons", () =>
    Effect.gen(function*() {
      const r = yield* artanaJson(["report", "plan-denied", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(r.code).toBe(3)
      const steps = (r.json as { steps: ReadonlyArray<{ id: string; status: string; decision: string; outputHash: string | null }> }).steps
      expect(steps.map((s) => [s.id, s.status, s.decision])).toEqual([["a", "ok", "allowed"], ["b", "denied", "denied"], ["c", "skipped", "none"]])
      expect(steps[2]!.outputHash).toBeNull()
      const text = yield* artana(["report", "plan-denied", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(text.code).toBe(3)
      expect(text.stdout).toContain("✗ run plan-denied  failed")
      expect(text.stdout).toMatch(/STEP\s+TOOL\s+DECISION\s+TIME\s+INPUT\s+OUTPUT\s+WHY/)
      expect(text.stdout).toMatch(/✓ a\s+echo\s+allowed/)
      expect(text.stdout).toMatch(/⊘ b\s+secret\s+denied\s+\d+ ms\s+[0-9a-f]{12}\s+[0-9a-f]{12}\s+secret is not allowed/)
      expect(text.stdout).toMatch(/○ c\s+echo\s+none\s+-\s+-\s+-\s+not reached/)
      expect(text.stdout).toContain("run failed with PolicyDenied")
      expect(text.stdout).toContain("3 steps: 1 ok, 1 denied, 0 failed, 1 skipped")
    }))

  it.live("a clean run exits 0; a run that is not a plan run is bad input (2)", () =>
    Effect.gen(function*() {
      expect((yield* artana(["report", "plan-ok", "--db", db, "--tenant", "acme"], { cwd: dir })).code).toBe(0)
      const notPlan = yield* artana(["report", "root", "--db", db, "--tenant", "acme", "--format", "json"], { cwd: dir })
      expect(notPlan.code).toBe(2)
      expect(notPlan.stdout).toBe("")
      expect(JSON.parse(notPlan.stderr)).toEqual({ error: { tag: "NotAPlanRun", message: 'run root is a "greet" run, not a plan run (artana.plan)', exitCode: 2 } })
    }))
})

describe("output through a pipe", () => {
  it.live("a multi-megabyte `report --format json` reaches a slow reader whole, and the exit code is the report's", () =>
    Effect.gen(function*() {
      const piped = yield* artanaPipedToSlowReader(["report", "plan-big", "--db", db, "--tenant", "bulk", "--format", "json"], { cwd: dir })
      expect(piped.stdout.length).toBeGreaterThan(3 * 1024 * 1024)
      const report = JSON.parse(piped.stdout) as { readonly steps: ReadonlyArray<{ readonly id: string; readonly status: string; readonly args: { readonly text?: string } }> }
      expect(report.steps.map((s) => [s.id, s.status])).toEqual([["big", "ok"], ["no", "denied"]])
      expect(report.steps[0]?.args.text).toBe(BIG_TEXT)
      // Exit 3 (a denial): the exit that cut the output at 64 KiB when the process ended before stdout drained.
      expect(piped.code).toBe(3)
    }))
})

describe("artana verify", () => {
  it.live("an intact chain exits 0; a tampered event exits 6 naming the first broken seq; a stale exported head is caught", () =>
    Effect.gen(function*() {
      const own = path.join(tempDir(), "verify.db")
      fs.copyFileSync(db, own)
      const ok = yield* artanaJson(["verify", "plan-ok", "--db", own, "--tenant", "acme"], { cwd: dir })
      expect(ok.code).toBe(0)
      const report = ok.json as { ok: boolean; events: number; headSeq: number; headHash: string }
      expect(report).toMatchObject({ ok: true, runId: "plan-ok" })
      const text = yield* artana(["verify", "plan-ok", "--db", own, "--tenant", "acme", "--head", `${report.headSeq}:${report.headHash}`], { cwd: dir })
      expect(text.code).toBe(0)
      expect(text.stdout).toContain(`✓ run plan-ok: hash chain intact, ${report.events} events`)

      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE events SET payload = json_set(payload, '$.result.echoed', 'forged') WHERE run_id = 'plan-ok' AND seq = 3`
      }).pipe(Effect.provide(Layer.orDie(SqliteStore.layer({ filename: own }))))
      const broken = yield* artanaJson(["verify", "plan-ok", "--db", own, "--tenant", "acme"], { cwd: dir })
      expect(broken.code).toBe(6)
      expect(broken.json).toMatchObject({ ok: false, firstBrokenSeq: 3 })
      const brokenText = yield* artana(["verify", "plan-ok", "--db", own, "--tenant", "acme"], { cwd: dir })
      expect(brokenText.stdout).toContain("✗ run plan-ok: hash chain broken at seq 3")

      const wrongHead = yield* artana(["verify", "plan-denied", "--db", own, "--tenant", "acme", "--head", `2:${"0".repeat(64)}`], { cwd: dir })
      expect(wrongHead.code).toBe(6)
      const badHead = yield* artana(["verify", "plan-ok", "--db", own, "--tenant", "acme", "--head", "nope"], { cwd: dir })
      expect(badHead.code).toBe(2)
      expect(badHead.stderr).toContain("--head")
    }))
})

describe("bad input and missing things", () => {
  it.live("a missing run is exit 5; a missing database is exit 5 and is not created; a missing argument is exit 2", () =>
    Effect.gen(function*() {
      const missingRun = yield* artana(["report", "no-such-run", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(missingRun).toMatchObject({ code: 5, stdout: "" })
      expect(missingRun.stderr).toContain("run no-such-run not found for tenant acme")
      const empty = tempDir()
      for (const command of [["list-runs"], ["report", "x"], ["show-run", "x"], ["verify", "x"], ["replay", "x"]]) {
        const r = yield* artana(command, { cwd: empty })
        expect(r.code, command.join(" ")).toBe(5)
        expect(r.stderr).toContain("no database at ./artana.db")
      }
      expect(fs.readdirSync(empty)).toEqual([])
      const noArg = yield* artana(["report", "--db", db], { cwd: dir })
      expect(noArg.code).toBe(2)
      expect(noArg.stderr).toContain("Missing argument <RUN>")
      const unknown = yield* artana(["frobnicate"], { cwd: dir })
      expect(unknown.code).toBe(2)
      const badFormat = yield* artana(["report", "plan-ok", "--db", db, "--tenant", "acme", "--format", "yaml"], { cwd: dir })
      expect(badFormat.code).toBe(2)
    }))

  it.live("the store is read, never written, by the read commands", () =>
    Effect.gen(function*() {
      const before = yield* Effect.flatMap(EventStore.EventStore, (s) => s.listRuns("acme")).pipe(Effect.provide(Layer.orDie(SqliteStore.layer({ filename: db }))))
      for (const command of [["list-runs"], ["report", "plan-ok"], ["show-run", "root"], ["verify", "plan-denied"]]) {
        yield* artana([...command, "--db", db, "--tenant", "acme"], { cwd: dir })
      }
      const after = yield* Effect.flatMap(EventStore.EventStore, (s) => s.listRuns("acme")).pipe(Effect.provide(Layer.orDie(SqliteStore.layer({ filename: db }))))
      expect(after).toEqual(before)
    }))
})
