// Crash recovery with real processes on a real SQLite file: an agent SIGKILLed in the middle of a compaction (during
// the summary's model call) and in the middle of a sub-agent run (during the child's model call) is resumed by a
// new process, which finishes the run without repeating any tool call; the log verifies and replays exactly. A
// grandchild killed after its non-idempotent tool's side effect leaves its whole lineage waiting for a person, and
// once the person settled that step, resuming the root finishes the tree as a run without the crash would.
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, type Scope } from "effect"
import { type Event, EventStore, Kernel } from "@artana/core"
import { SubAgent } from "@artana/agent"
import { effects, makeScenario, type Scenario, tenant } from "./crash/scenarios.js"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./crash/main.ts", import.meta.url))

interface ChildExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * How long one child may take: `node --import tsx` loads about a thousand modules through tsx's hooks (4 s of CPU);
 * on a busy machine (2 cores, load 30) a child took 50 s. A test's limit is its children's, plus its own work.
 */
const CHILD_SECONDS = 180
const limitFor = (children: number) => (children * CHILD_SECONDS + 60) * 1000

/** Runs the child program to its end (or its SIGKILL); killed when the test's scope closes if still running. */
const runChild = (args: ReadonlyArray<string>): Effect.Effect<ChildExit, Error, Scope.Scope> =>
  Effect.flatMap(
    Effect.acquireRelease(
      Effect.sync(() => spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] })),
      (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
    ),
    (child) =>
      Effect.async<ChildExit, Error>((resume) => {
        let stdout = ""
        let stderr = ""
        child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c))
        child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
        child.once("error", (e) => resume(Effect.fail(e)))
        child.once("close", (code, signal) => resume(Effect.succeed({ code, signal, stdout, stderr })))
      }).pipe(Effect.timeoutFail({ duration: `${CHILD_SECONDS} seconds`, onTimeout: () => new Error(`child ${args.join(" ")} did not exit`) }))
  )

const workDir = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "artana-agent-crash-"))
    return { dir, db: join(dir, "artana.db") }
  }),
  ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** Every run of the tree rooted at `runId`, with its events. */
const readLogs = (runId: string) =>
  Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const runs = yield* store.listRuns(tenant.tenantId, { rootRunId: runId })
    const logs = new Map<string, ReadonlyArray<Event.Event>>()
    for (const r of runs) logs.set(r.runId, yield* store.readEvents(tenant.tenantId, r.runId))
    return { runs, logs }
  })

const describeExit = (e: ChildExit) => `exited with ${e.signal ?? e.code}\nstdout: ${e.stdout}\nstderr: ${e.stderr}`

/** Kills a run at `crashAt` in one process, resumes it in another; returns what the test checks. */
const crashAndResume = (scenario: Scenario, crashAt: string) =>
  Effect.gen(function*() {
    const { db, dir } = yield* workDir
    const runId = `${scenario}-1`
    const args = ["--db", db, "--dir", dir, "--run", runId, "--scenario", scenario]
    const first = yield* runChild([...args, "--crash-at", crashAt])
    if (first.signal !== "SIGKILL") throw new Error(`expected the first process to be SIGKILLed; it ${describeExit(first)}`)
    const effectsAtCrash = effects(dir)
    const fixture = makeScenario({ dir })
    const logsAtCrash = yield* readLogs(runId).pipe(Effect.provide(fixture.layer(db)))
    const second = yield* runChild(args)
    if (second.code !== 0) throw new Error(`expected the resumed process to finish the run; it ${describeExit(second)}`)
    const output: unknown = JSON.parse(second.stdout.trim().split("\n").pop() ?? "null")
    // Inspect, and replay, in this process, on the same file.
    const inspect = Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const { logs, runs } = yield* readLogs(runId)
      for (const r of runs) expect((yield* kernel.verify({ tenantId: tenant.tenantId, runId: r.runId })).ok).toBe(true)
      const replayed = yield* fixture.replay(scenario, runId)
      const tree = yield* SubAgent.lineage({ tenantId: tenant.tenantId, runId })
      return { runs, logs, replayed, tree }
    }).pipe(Effect.provide(fixture.layer(db)))
    const effectsBeforeReplay = effects(dir)
    const inspected = yield* inspect
    expect(effects(dir)).toEqual(effectsBeforeReplay)
    return { runId, output, effectsAtCrash, logsAtCrash, effects: effects(dir), ...inspected }
  })

/** The content of the tool message answering `tool` in the last model request of a log: what that model was told. */
const toldByTool = (events: ReadonlyArray<Event.Event>, tool: string) => {
  const requests = events.flatMap((e) => (e.payload._tag === "ModelRequested" ? [e.payload] : []))
  return requests[requests.length - 1]?.messages.find((m) => m.role === "tool" && m.name === tool)?.content
}

const keys = (events: ReadonlyArray<Event.Event>, type: string) => events.filter((e) => e.type === type).map((e) => e.stepKey)

describe.concurrent("crash recovery of agents (SIGKILLed processes, SQLite on disk)", () => {
  it.scoped("killed in the middle of a compaction: the summary is asked again, no tool call repeats, replay is exact", () =>
    Effect.gen(function*() {
      const r = yield* crashAndResume("compaction", "summary:2")
      expect(r.output).toMatchObject({ outcome: "result", result: { status: "completed", output: { output: "done at 8", compactions: 2 } } })
      // Every observation happened once, each under its own step's key; the crash lost none and repeated none.
      expect(r.effects.map((l) => l.split(" ")[1])).toEqual(["0", "1", "2", "3", "4", "5", "6", "7", "8"])
      expect(new Set(r.effects.map((l) => l.split(" ")[2])).size).toBe(9)
      expect(r.effectsAtCrash.length).toBeGreaterThanOrEqual(6)
      // At the kill the first compaction was logged and the second was not: it died in the summary's model call.
      const atCrash = r.logsAtCrash.logs.get(r.runId)!
      expect(r.logsAtCrash.runs[0]!.status).toBe("running")
      expect(keys(atCrash, "ModelRequested").filter((k) => k.startsWith("compaction"))).toEqual(["compaction:0"])
      expect(keys(atCrash, "ToolCompleted")).toHaveLength(r.effectsAtCrash.length)
      const log = r.logs.get(r.runId)!
      // The first compaction came from the log; the second, cut short by the kill, was asked once more and logged once.
      expect(keys(log, "ModelRequested").filter((k) => k.startsWith("compaction"))).toEqual(["compaction:0", "compaction:1"])
      expect(keys(log, "RunResumed")).toEqual(["run"])
      expect(keys(log, "ToolRequested")).toHaveLength(9)
      expect(r.replayed).toMatchObject({ status: "completed", output: { output: "done at 8" } })
    }), limitFor(2))

  it.scoped("killed in the middle of a sub-agent run: the parent's call resumes the same child run, no tool call repeats", () =>
    Effect.gen(function*() {
      const r = yield* crashAndResume("subagent", "child:3")
      expect(r.output).toMatchObject({ outcome: "result", result: { status: "completed", output: { output: "report written" } } })
      const childId = "subagent-1::sub_agent::subagent-1/turn:0/tool:0"
      expect(r.effects).toEqual([
        `observe 100 ${childId}/turn:0/tool:0`,
        `observe 101 ${childId}/turn:1/tool:0`,
        `observe 102 ${childId}/turn:2/tool:0`
      ])
      expect(r.effectsAtCrash).toHaveLength(2)
      // At the kill both runs were running: the child had two tool calls done and was waiting for its model.
      expect(r.logsAtCrash.runs.map((x) => x.status)).toEqual(["running", "running"])
      expect(keys(r.logsAtCrash.logs.get(childId)!, "ToolCompleted")).toEqual(["turn:0/tool:0", "turn:1/tool:0"])
      expect(keys(r.logsAtCrash.logs.get("subagent-1")!, "ToolRequested")).toEqual(["turn:0/tool:0"])
      // One child run, resumed once; the parent's call to it requested once and completed once.
      expect(r.runs.map((x) => x.runId).sort()).toEqual([childId, "subagent-1"].sort())
      const parent = r.logs.get("subagent-1")!
      const child = r.logs.get(childId)!
      expect(parent.filter((e) => e.stepKey === "turn:0/tool:0").map((e) => e.type)).toEqual(["ToolRequested", "ToolCompleted"])
      expect(keys(parent, "RunResumed")).toEqual(["run"])
      expect(keys(child, "RunResumed")).toEqual(["run"])
      expect(keys(child, "ModelRequested")).toEqual(["turn:0", "turn:1", "turn:2", "turn:3"])
      expect(r.tree.children.map((c) => c.run.runId)).toEqual([childId])
      expect(r.tree.children[0]!.run.status).toBe("completed")
      expect(r.replayed).toMatchObject({ status: "completed", output: { output: "report written" } })
    }), limitFor(2))

  it.scoped("a grandchild killed in doubt: its parent and the root wait for a person, naming its run and step; reconciled, the root's resume finishes the tree as without the crash, the side effect once", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "doubt-1"
      const managerId = SubAgent.childRunId(runId, `${runId}/turn:0/tool:0`)
      const clerkId = SubAgent.childRunId(managerId, `${managerId}/turn:0/tool:0`)
      const args = ["--db", db, "--dir", dir, "--run", runId, "--scenario", "doubt"]
      const first = yield* runChild([...args, "--crash-at", "send:1"])
      if (first.signal !== "SIGKILL") throw new Error(`expected the first process to be SIGKILLed; it ${describeExit(first)}`)
      // The notice went out; the kill came before its outcome was logged.
      const sent = [`send board ${clerkId}/turn:0/tool:0`]
      expect(effects(dir)).toEqual(sent)
      const fixture = makeScenario({ dir })
      const atCrash = yield* readLogs(runId).pipe(Effect.provide(fixture.layer(db)))
      expect(keys(atCrash.logs.get(clerkId)!, "ToolRequested")).toEqual(["turn:0/tool:0"])
      expect(keys(atCrash.logs.get(clerkId)!, "ToolCompleted")).toEqual([])

      // Recovery finds the step in doubt: the clerk waits for a person, and so do the manager and the director, each
      // naming the path down to it; none of them logged a failure, and no model was told anything.
      const waiting = yield* runChild(args)
      if (waiting.code !== 0) throw new Error(`expected the recovery to report the run waiting; it ${describeExit(waiting)}`)
      const path = [
        { runId: managerId, stepKey: "turn:0/tool:0", tool: "assign" },
        { runId: clerkId, stepKey: "turn:0/tool:0", tool: "send" }
      ]
      expect(JSON.parse(waiting.stdout.trim().split("\n").pop() ?? "null")).toEqual({
        outcome: "result",
        result: { status: "needs_reconciliation", runId, stepKey: "turn:0/tool:0", tool: "delegate", waitingOn: path }
      })
      const inDoubt = yield* Effect.gen(function*() {
        const store = yield* EventStore.EventStore
        const { logs, runs } = yield* readLogs(runId)
        return { logs, runs, path: yield* EventStore.reconciliationPath(store, tenant.tenantId, runId) }
      }).pipe(Effect.provide(fixture.layer(db)))
      expect(Object.fromEntries(inDoubt.runs.map((r) => [r.runId, r.status]))).toEqual({
        [runId]: "needs_reconciliation",
        [managerId]: "needs_reconciliation",
        [clerkId]: "needs_reconciliation"
      })
      expect(inDoubt.path).toEqual([{ runId, stepKey: "turn:0/tool:0", tool: "delegate" }, ...path])
      const marker = (id: string) => inDoubt.logs.get(id)!.filter((e) => e.type === "ReconciliationRequired").map((e) => ({ stepKey: e.stepKey, payload: e.payload }))
      expect(marker(runId)).toMatchObject([{ stepKey: "turn:0/tool:0", payload: { tool: "delegate", waitingOn: path } }])
      expect(marker(managerId)).toMatchObject([{ stepKey: "turn:0/tool:0", payload: { tool: "assign", waitingOn: path.slice(1) } }])
      expect(marker(clerkId)).toEqual([{ stepKey: "turn:0/tool:0", payload: { _tag: "ReconciliationRequired", tool: "send", idempotencyKey: `${clerkId}/turn:0/tool:0` } }])
      for (const log of inDoubt.logs.values()) expect(keys(log, "ToolFailed")).toEqual([])
      expect(keys(inDoubt.logs.get(runId)!, "ModelRequested")).toEqual(["turn:0"])
      expect(keys(inDoubt.logs.get(managerId)!, "ModelRequested")).toEqual(["turn:0"])

      // Resumed again before anyone settled it: still waiting, nothing written anywhere.
      const heads = new Map(inDoubt.runs.map((r) => [r.runId, r.headSeq]))
      const again = yield* runChild(args)
      expect(JSON.parse(again.stdout.trim().split("\n").pop() ?? "null")).toMatchObject({ result: { status: "needs_reconciliation", waitingOn: path } })
      const afterAgain = yield* readLogs(runId).pipe(Effect.provide(fixture.layer(db)))
      expect(new Map(afterAgain.runs.map((r) => [r.runId, r.headSeq]))).toEqual(heads)
      expect(effects(dir)).toEqual(sent)

      // The person checks: the notice was delivered. Only the step in doubt can be settled, not a run that waits on it.
      const settle = Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const refused = yield* Effect.flip(kernel.reconcile({ tenantId: tenant.tenantId, runId, outcome: { ok: true, result: "done" } }))
        yield* kernel.reconcile({ tenantId: tenant.tenantId, runId: clerkId, stepKey: "turn:0/tool:0", outcome: { ok: true, result: "delivered to board" } })
        return refused
      }).pipe(Effect.provide(fixture.layer(db)))
      const refused = yield* settle
      expect(refused).toMatchObject({ _tag: "InvalidRunState", runId })
      expect(refused.message).toContain(clerkId)

      const resumed = yield* runChild(args)
      if (resumed.code !== 0) throw new Error(`expected the resumed root to finish the tree; it ${describeExit(resumed)}`)
      const output = "director: manager: clerk: delivered to board"
      expect(JSON.parse(resumed.stdout.trim().split("\n").pop() ?? "null")).toMatchObject({ outcome: "result", result: { status: "completed", output: { output } } })
      // The notice was sent once, in all.
      expect(effects(dir)).toEqual(sent)

      const after = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const { logs, runs } = yield* readLogs(runId)
        for (const r of runs) expect((yield* kernel.verify({ tenantId: tenant.tenantId, runId: r.runId })).ok).toBe(true)
        return { logs, runs, replayed: yield* fixture.replay("doubt", runId) }
      }).pipe(Effect.provide(fixture.layer(db)))
      expect(after.runs.map((r) => r.status)).toEqual(["completed", "completed", "completed"])
      expect(after.replayed).toMatchObject({ status: "completed", output: { output } })
      // Each parent's step requested its child once and completed once, with the child's real output.
      expect(after.logs.get(runId)!.filter((e) => e.stepKey === "turn:0/tool:0").map((e) => e.type)).toEqual(["ToolRequested", "ReconciliationRequired", "ToolCompleted"])
      expect(after.logs.get(managerId)!.filter((e) => e.stepKey === "turn:0/tool:0").map((e) => e.type)).toEqual(["ToolRequested", "ReconciliationRequired", "ToolCompleted"])

      // The same tree without the crash, in another file: every model was told exactly the same.
      const clean = yield* workDir
      const cleanFixture = makeScenario({ dir: clean.dir })
      const baseline = yield* Effect.gen(function*() {
        const result = yield* cleanFixture.run("doubt", runId)
        return { result, ...(yield* readLogs(runId)) }
      }).pipe(Effect.provide(cleanFixture.layer(clean.db)))
      expect(baseline.result).toMatchObject({ status: "completed", output: { output } })
      expect(effects(clean.dir)).toEqual(sent)
      for (const [id, tool] of [[runId, "delegate"], [managerId, "assign"], [clerkId, "send"]] as const) {
        expect(toldByTool(after.logs.get(id)!, tool)).toBe(toldByTool(baseline.logs.get(id)!, tool))
      }
      expect(toldByTool(after.logs.get(runId)!, "delegate")).toBe("manager: clerk: delivered to board")
      expect(toldByTool(after.logs.get(managerId)!, "assign")).toBe("clerk: delivered to board")
    }), limitFor(4))
})
