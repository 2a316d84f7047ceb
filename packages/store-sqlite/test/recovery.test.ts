// Recovery on a real SQLite file with real processes: runs SIGKILLed at many points and resumed by a new
// process, two processes racing to resume one run, pause and resume across processes, code that changed
// between a crash and its resume, a tampered database file, and bad input. Child programs: test/child/.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Either, Layer, Schema } from "effect"
import { Chat, type Event, Kernel } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import {
  ApprovalOutput,
  countLines,
  CrashyOutput,
  type Killer,
  lines,
  makeFixture,
  paths,
  tenant
} from "./child/workflows.js"
import {
  baseArgs,
  type ChildExit,
  errorOf,
  inProcess,
  inspectRun,
  killChildren,
  killedOf,
  resultOf,
  runChild,
  spawnChild,
  waitForFile,
  workDir
} from "./helpers.js"

// Each test's children are SIGKILLed when its scope closes (pass, failure or timeout); this sweeps up any
// child a test could not reach, without touching the children of tests still running concurrently.
afterAll(() => killChildren())

// Tests run concurrently (each on its own temp dir): most of the time goes to starting child processes. A
// generous per-test limit, as several tests share two cores with their children (one child's start alone took 66 s
// at load 32).
const TIMEOUT = 600_000

const seqs = (events: ReadonlyArray<Event.Event>) => events.map((e) => e.seq)
const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1)
const typesOf = (events: ReadonlyArray<Event.Event>) => events.map((e) => e.type)
const stepTypes = (events: ReadonlyArray<Event.Event>, stepKey: string) =>
  events.filter((e) => e.stepKey === stepKey).map((e) => e.type)

/** The value `ctx.now()` logged at `stepKey`. */
const loggedValue = (events: ReadonlyArray<Event.Event>, stepKey: string): unknown => {
  const p = events.find((e) => e.stepKey === stepKey)?.payload
  return p?._tag === "StepCompleted" ? p.value : undefined
}

const readFileOrUndefined = (file: string): string | undefined => {
  try {
    return readFileSync(file, "utf8")
  } catch {
    return undefined
  }
}

const completedOutput = <A, I>(schema: Schema.Schema<A, I>, result: { readonly status: string; readonly output?: unknown }) => {
  expect(result.status).toBe("completed")
  return Schema.decodeUnknownSync(schema)(result.output)
}

interface CrashCase {
  readonly label: string
  readonly killer: Killer
  readonly where: string
  /** The non-idempotent `send` is caught in doubt; whether its side effect happened before the kill. */
  readonly inDoubt?: "sent" | "unsent"
  /** Executions of step "prepare"'s effect: a step is memoized once its StepCompleted is durable, not before. */
  readonly prepareRuns?: number
  /** The kernel's `idempotentToolDurability` (two-phase when absent). */
  readonly durability?: "one-commit"
}

// Step keys of the crashy workflow: step:0 prepare, tool:1 record "first" (idempotent), now:2,
// tool:3 send "second" (not idempotent), tool:4 record "third" (idempotent), step:5 total.
const CRASH_CASES: ReadonlyArray<CrashCase> = [
  { label: "start", killer: "self", where: "after RunStarted, before the first step" },
  { label: "prepare:inside", killer: "self", where: "inside ctx.step, before its StepCompleted", prepareRuns: 2 },
  { label: "before-first-tool", killer: "self", where: "between a step and a tool, before ToolRequested" },
  { label: "record:first:start", killer: "self", where: "after ToolRequested, before the idempotent side effect" },
  { label: "record:first:after-effect", killer: "self", where: "after the idempotent side effect, before ToolCompleted" },
  { label: "after-first-tool", killer: "parent", where: "after ToolCompleted, before ctx.now" },
  { label: "after-now", killer: "self", where: "between ctx.now and the next tool" },
  { label: "send:second:start", killer: "self", where: "after ToolRequested, before the non-idempotent side effect", inDoubt: "unsent" },
  { label: "send:second:after-effect", killer: "self", where: "after the non-idempotent side effect, before ToolCompleted", inDoubt: "sent" },
  { label: "send:second:after-effect", killer: "parent", where: "in the non-idempotent handler, after its side effect", inDoubt: "sent" },
  { label: "after-send", killer: "self", where: "after the non-idempotent tool completed" },
  { label: "record:third:start", killer: "parent", where: "in the idempotent handler, before its side effect" },
  { label: "record:third:after-effect", killer: "parent", where: "in the idempotent handler, after its side effect" },
  { label: "before-complete", killer: "self", where: "after the last step, before RunCompleted" },
  // One commit per idempotent tool step: a crash in its handler leaves no trace; the call runs again, once, with its key.
  { label: "record:first:start", killer: "self", where: "one commit: in the idempotent handler, before its side effect", durability: "one-commit" },
  { label: "record:first:after-effect", killer: "self", where: "one commit: after the idempotent side effect, before the commit", durability: "one-commit" },
  { label: "record:third:after-effect", killer: "parent", where: "one commit: in the last idempotent handler, after its side effect", durability: "one-commit" },
  { label: "send:second:after-effect", killer: "self", where: "one commit: a non-idempotent tool stays two-phase", inDoubt: "sent", durability: "one-commit" }
]

describe.concurrent("crash recovery: a SIGKILLed process, a new process resumes the run", () => {
  it.scopedLive.each(CRASH_CASES)("killed by $killer at $label ($where)", (c) =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "order-1"
      const files = paths(dir)
      const keys = { first: `${runId}/tool:1`, send: `${runId}/tool:3`, third: `${runId}/tool:4` }
      const execute = [...baseArgs("execute", { db, dir, runId }), ...(c.durability === undefined ? [] : ["--durability", c.durability])]

      // 1. The first process dies at the crash point.
      const first = yield* spawnChild([...execute, "--crash-at", c.label, "--killer", c.killer])
      if (c.killer === "parent") {
        yield* waitForFile(files.crashMarker, first)
        expect(readFileSync(files.crashMarker, "utf8")).toBe(c.label)
        first.kill()
      }
      killedOf(yield* first.exit)
      const crashed = yield* inspectRun(dir, db, runId)
      expect(crashed.info.status).toBe("running")
      expect(crashed.report.ok).toBe(true)
      // In its handler, an idempotent call is logged as requested (two-phase), or not at all (one commit).
      const inHandler = /^record:(first|third):/.exec(c.label)
      if (inHandler !== null) {
        expect(stepTypes(crashed.events, inHandler[1] === "first" ? "tool:1" : "tool:4")).toEqual(c.durability === "one-commit" ? [] : ["ToolRequested"])
      }
      const effectsAtCrash = lines(files.effects)

      // 2. A new process resumes it.
      const resumed = resultOf(yield* runChild(execute))
      let final = resumed
      if (c.inDoubt !== undefined) {
        expect(resumed).toEqual({ status: "needs_reconciliation", runId, stepKey: "tool:3", tool: "send" })
        const held = yield* inspectRun(dir, db, runId)
        expect(held.info.status).toBe("needs_reconciliation")
        expect(held.report.ok).toBe(true)
        expect(stepTypes(held.events, "tool:3")).toEqual(["ToolRequested", "ReconciliationRequired"])
        // The resume ran nothing: the in-doubt send was not repeated, nothing after it ran.
        expect(lines(files.effects)).toEqual(effectsAtCrash)
        expect(countLines(files.effects, `send ${keys.send}`)).toBe(c.inDoubt === "sent" ? 1 : 0)
        // Another execution does not run it either: only a person settles it.
        const again = yield* inProcess(dir, db, (f) =>
          Effect.flatMap(Kernel.Kernel, (k) => k.execute(f.workflows.crashy, { runId, tenant, input: { order: "o-1" } })))
        expect(again.status).toBe("needs_reconciliation")
        expect((yield* inspectRun(dir, db, runId)).info.headSeq).toBe(held.info.headSeq)
        expect(lines(files.effects)).toEqual(effectsAtCrash)

        // 3. A person settles it from what really happened, and a new process finishes the run.
        const outcome = c.inDoubt === "sent" ? { ok: true, result: "sent" } : { ok: false, error: "the message never left" }
        final = resultOf(yield* runChild([...baseArgs("reconcile", { db, dir, runId }), "--outcome", JSON.stringify(outcome)]))
      }
      const output = completedOutput(CrashyOutput, final)

      const log = yield* inspectRun(dir, db, runId)
      expect(log.info.status).toBe("completed")
      expect(log.report).toMatchObject({ ok: true, events: log.events.length, headSeq: log.info.headSeq })
      expect(seqs(log.events)).toEqual(oneTo(log.info.headSeq))
      // Every side effect once per idempotency key; the in-doubt send never repeated.
      expect(countLines(files.effects, `record ${keys.first}`)).toBe(1)
      expect(countLines(files.effects, `record ${keys.third}`)).toBe(1)
      expect(countLines(files.effects, `send ${keys.send}`)).toBe(c.inDoubt === "unsent" ? 0 : 1)
      expect(lines(files.effects)).toHaveLength(c.inDoubt === "unsent" ? 2 : 3)
      expect(countLines(files.steps, "step prepare")).toBe(c.prepareRuns ?? 1)
      expect(countLines(files.steps, "step total")).toBe(1)
      // One request and one outcome per tool step; the log never forked.
      expect(stepTypes(log.events, "tool:1")).toEqual(["ToolRequested", "ToolCompleted"])
      expect(stepTypes(log.events, "tool:3")).toEqual(
        c.inDoubt === undefined
          ? ["ToolRequested", "ToolCompleted"]
          : ["ToolRequested", "ReconciliationRequired", c.inDoubt === "sent" ? "ToolCompleted" : "ToolFailed"]
      )
      expect(stepTypes(log.events, "tool:4")).toEqual(["ToolRequested", "ToolCompleted"])
      const types = typesOf(log.events)
      expect(types.filter((t) => t === "RunResumed")).toHaveLength(c.inDoubt === undefined ? 1 : 2)
      expect(types.filter((t) => t === "RunCompleted")).toHaveLength(1)
      expect(types[types.length - 1]).toBe("RunCompleted")

      expect(output).toEqual({
        prepared: 41,
        // The idempotent handler re-ran with the same key and skipped the line it had written.
        first: { key: keys.first, line: "first", fresh: c.label !== "record:first:after-effect" },
        stamp: loggedValue(log.events, "now:2"),
        sent: c.inDoubt === "unsent" ? "not sent: the message never left" : "sent",
        third: { key: keys.third, line: "third", fresh: c.label !== "record:third:after-effect" },
        total: 42
      })

      // A replay in yet another process returns the same output and executes nothing.
      const effectsAtEnd = lines(files.effects)
      const stepsAtEnd = lines(files.steps)
      const replayed = yield* inProcess(dir, db, (f) =>
        Effect.flatMap(Kernel.Kernel, (k) => k.replay(f.workflows.crashy, { tenantId: tenant.tenantId, runId })))
      expect(replayed).toEqual({ status: "completed", runId, output })
      expect(lines(files.effects)).toEqual(effectsAtEnd)
      expect(lines(files.steps)).toEqual(stepsAtEnd)
      expect((yield* inspectRun(dir, db, runId)).info.headSeq).toBe(log.info.headSeq)
    }), TIMEOUT)
})

/** Starts two children that hold their first append at a barrier, releases them together, returns both exits. */
const race = (dir: string, args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const files = paths(dir)
    const a = yield* spawnChild([...args, "--barrier", "a"])
    const b = yield* spawnChild([...args, "--barrier", "b"])
    // Both have read the run and its log, and wait to write.
    yield* waitForFile(files.ready("a"), a)
    yield* waitForFile(files.ready("b"), b)
    writeFileSync(files.go, "")
    const exits: ReadonlyArray<ChildExit> = [yield* a.exit, yield* b.exit]
    const winners = exits.filter((e) => e.output?.outcome === "result")
    const losers = exits.filter((e) => e.output?.outcome !== "result")
    expect(winners).toHaveLength(1)
    expect(losers).toHaveLength(1)
    const loser = errorOf(losers[0]!)
    expect(loser._tag).toBe("SequenceConflict")
    expect(loser.message).toContain("another writer")
    return resultOf(winners[0]!)
  })

describe.concurrent("two processes resume one run at once", () => {
  it.scopedLive("a paused run answered by two processes: one completes, the other gets SequenceConflict", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "approval-race"
      const paused = yield* inProcess(dir, db, (f) =>
        Effect.flatMap(Kernel.Kernel, (k) => k.execute(f.workflows.approval, { runId, tenant, input: { amount: 250 } })))
      expect(paused.status).toBe("paused")
      const response = JSON.stringify({ approved: true, by: "ann", limit: "300" })

      const winner = yield* race(dir, [...baseArgs("resume", { db, dir, runId }), "--response", response])
      expect(completedOutput(ApprovalOutput, winner)).toEqual({ decision: "approved", by: "ann", quote: 500, limit: 300 })

      const log = yield* inspectRun(dir, db, runId)
      expect(log.info.status).toBe("completed")
      expect(log.report.ok).toBe(true)
      expect(seqs(log.events)).toEqual(oneTo(log.events.length))
      expect(typesOf(log.events).filter((t) => t === "HumanResponded")).toHaveLength(1)
      expect(countLines(paths(dir).effects, `send ${runId}/tool:2`)).toBe(1)
      expect(lines(paths(dir).effects)).toHaveLength(1)
    }), TIMEOUT)

  it.scopedLive("a crashed run recovered by two processes: one completes, the other gets SequenceConflict", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "crash-race"
      killedOf(yield* runChild([...baseArgs("execute", { db, dir, runId }), "--crash-at", "after-now"]))
      const before = yield* inspectRun(dir, db, runId)
      expect(before.info.status).toBe("running")

      const winner = yield* race(dir, baseArgs("resume", { db, dir, runId }))
      const output = completedOutput(CrashyOutput, winner)
      expect(output.sent).toBe("sent")

      const log = yield* inspectRun(dir, db, runId)
      expect(log.info.status).toBe("completed")
      expect(log.report.ok).toBe(true)
      expect(seqs(log.events)).toEqual(oneTo(log.events.length))
      // The claim of the winner is the only RunResumed; the loser wrote nothing.
      expect(typesOf(log.events).filter((t) => t === "RunResumed")).toHaveLength(1)
      expect(log.events[before.events.length]?.type).toBe("RunResumed")
      const files = paths(dir)
      expect(countLines(files.effects, `send ${runId}/tool:3`)).toBe(1)
      expect(countLines(files.effects, `record ${runId}/tool:1`)).toBe(1)
      expect(countLines(files.effects, `record ${runId}/tool:4`)).toBe(1)
      expect(lines(files.effects)).toHaveLength(3)
      expect(countLines(files.steps, "step total")).toBe(1)
    }), TIMEOUT)
})

describe.concurrent("pause in one process, resume in another", () => {
  it.scopedLive("the response is decoded by the pause's schema; an invalid one writes nothing and can be retried", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "approval-1"
      const files = paths(dir)

      const paused = resultOf(yield* runChild([...baseArgs("execute", { db, dir, runId }), "--workflow", "approval"]))
      if (paused.status !== "paused") return expect.fail(`expected a paused run, got ${paused.status}`)
      expect(paused.reason).toBe("approve a payment of 250")
      const atPause = yield* inspectRun(dir, db, runId)
      expect(atPause.info.status).toBe("paused")
      const pause = atPause.events[atPause.events.length - 1]!.payload
      expect(pause).toMatchObject({ _tag: "PauseRequested", ticket: paused.ticket })
      // The response schema is logged for whoever answers.
      expect(pause._tag === "PauseRequested" && pause.responseSchema).toMatchObject({ required: ["approved", "by", "limit"] })

      const invalid = errorOf(yield* runChild([
        ...baseArgs("resume", { db, dir, runId }),
        "--response",
        JSON.stringify({ approved: "yes", by: "ann", limit: "250" })
      ]))
      expect(invalid._tag).toBe("InvalidHumanResponse")
      expect(invalid.message).toContain(paused.ticket)
      expect(invalid.message).toContain("$.approved")
      expect(invalid.message).toContain("still paused")
      const afterInvalid = yield* inspectRun(dir, db, runId)
      expect(afterInvalid.info).toEqual(atPause.info)
      expect(afterInvalid.events).toEqual(atPause.events)
      expect(lines(files.effects)).toEqual([])

      const done = resultOf(yield* runChild([
        ...baseArgs("resume", { db, dir, runId }),
        "--response",
        JSON.stringify({ approved: true, by: "ann", limit: "250" })
      ]))
      // limit arrived as "250" and the workflow saw the number 250.
      expect(completedOutput(ApprovalOutput, done)).toEqual({ decision: "approved", by: "ann", quote: 500, limit: 250 })
      const log = yield* inspectRun(dir, db, runId)
      expect(log.report.ok).toBe(true)
      expect(seqs(log.events)).toEqual(oneTo(log.events.length))
      expect(typesOf(log.events)).toEqual([
        "RunStarted", "StepCompleted", "PauseRequested", "HumanResponded", "ToolRequested", "ToolCompleted", "RunCompleted"
      ])
      expect(log.events[3]!.payload).toEqual({
        _tag: "HumanResponded",
        ticket: paused.ticket,
        payload: { approved: true, by: "ann", limit: "250" }
      })
      expect(lines(files.effects)).toEqual([`send ${runId}/tool:2`])
    }), TIMEOUT)
})

describe.concurrent("code that changed between a crash and its resume", () => {
  it.scopedLive("a crashed run resumed by code whose steps are in another order fails with NonDeterminism naming both", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "changed-code"
      const files = paths(dir)
      const execute = baseArgs("execute", { db, dir, runId })
      killedOf(yield* runChild([...execute, "--crash-at", "after-first-tool"]))
      const before = yield* inspectRun(dir, db, runId)
      expect(stepTypes(before.events, "tool:1")).toEqual(["ToolRequested", "ToolCompleted"])

      const diverged = errorOf(yield* runChild([...execute, "--variant", "B"]))
      expect(diverged).toMatchObject({ _tag: "NonDeterminism", runId, stepKey: "tool:1" })
      expect(diverged["expected"]).toContain(`tool "record"`)
      expect(diverged["actual"]).toContain(`tool "send"`)
      expect(diverged.message).toMatch(/record.*send/)

      // Variant B's send did not run and none of its steps was written; the only new event is the
      // RunResumed with which the resuming process claimed the run before replaying it.
      expect(lines(files.effects)).toEqual([`record ${runId}/tool:1`])
      const after = yield* inspectRun(dir, db, runId)
      expect(after.info.status).toBe("running")
      expect(after.report.ok).toBe(true)
      expect(after.events.slice(0, before.events.length)).toEqual(before.events)
      expect(after.events.slice(before.events.length).map((e) => [e.type, e.stepKey])).toEqual([["RunResumed", "run"]])

      // The original code still resumes it.
      const done = yield* inProcess(dir, db, (f) =>
        Effect.flatMap(Kernel.Kernel, (k) => k.execute(f.workflows.crashy, { runId, tenant, input: { order: "o-1" } })))
      expect(done.status).toBe("completed")
      expect(countLines(files.effects, `send ${runId}/tool:3`)).toBe(1)
      expect(countLines(files.effects, `record ${runId}/tool:1`)).toBe(1)
    }), TIMEOUT)

  it.scopedLive("a paused run answered by changed code fails with NonDeterminism and writes nothing", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "changed-approval"
      const paused = yield* inProcess(dir, db, (f) =>
        Effect.flatMap(Kernel.Kernel, (k) => k.execute(f.workflows.approval, { runId, tenant, input: { amount: 250 } })))
      expect(paused.status).toBe("paused")
      const before = yield* inspectRun(dir, db, runId)
      const response = JSON.stringify({ approved: true, by: "ann", limit: "250" })

      const diverged = errorOf(yield* runChild([...baseArgs("resume", { db, dir, runId }), "--response", response, "--variant", "B"]))
      expect(diverged).toMatchObject({ _tag: "NonDeterminism", runId, stepKey: "step:0" })
      expect(diverged.message).toContain(`step "quote"`)
      expect(diverged.message).toContain(`step "estimate"`)
      const after = yield* inspectRun(dir, db, runId)
      expect(after.info).toEqual(before.info)
      expect(after.events).toEqual(before.events)
      expect(lines(paths(dir).effects)).toEqual([])

      const done = resultOf(yield* runChild([...baseArgs("resume", { db, dir, runId }), "--response", response]))
      expect(completedOutput(ApprovalOutput, done)).toMatchObject({ decision: "approved", quote: 500 })
    }), TIMEOUT)
})

// --- tampering -----------------------------------------------------------------------------------------------

/** Opens the database file directly (no Artana code) and runs `f` with the name of the events table. */
const tamper = (db: string, f: (sqlite: SqliteStore.Database, events: string) => void) => {
  const Sqlite = SqliteStore.driver()
  const sqlite = new Sqlite(db)
  try {
    const row = sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%events'").get()
    f(sqlite, Schema.decodeUnknownSync(Schema.Struct({ name: Schema.String }))(row).name)
  } finally {
    sqlite.close()
  }
}

interface TamperCase {
  readonly name: string
  readonly edit: (sqlite: SqliteStore.Database, events: string, runId: string, last: number) => void
  /** The first seq verify must name. */
  readonly brokenAt: (last: number) => number
  readonly reason: RegExp
}

const TAMPER_CASES: ReadonlyArray<TamperCase> = [
  {
    name: "UPDATE of one payload",
    edit: (sqlite, events, runId) => {
      const changed = sqlite.prepare(
        `UPDATE ${events} SET payload = json_set(payload, '$.result.line', 'forged') WHERE run_id = ? AND seq = 4`
      ).run(runId)
      expect(changed.changes).toBe(1)
    },
    brokenAt: () => 4,
    reason: /hash does not match/
  },
  {
    name: "UPDATE of a completed run's output",
    edit: (sqlite, events, runId, last) => {
      const changed = sqlite.prepare(`UPDATE ${events} SET payload = json_set(payload, '$.output', 'forged') WHERE run_id = ? AND seq = ? AND type = 'RunCompleted'`)
        .run(runId, last)
      expect(changed.changes).toBe(1)
    },
    brokenAt: (last) => last,
    reason: /hash does not match/
  },
  {
    name: "two rows' seq swapped",
    edit: (sqlite, events, runId) => {
      const move = sqlite.prepare(`UPDATE ${events} SET seq = ? WHERE run_id = ? AND seq = ?`)
      sqlite.exec("BEGIN")
      move.run(-1, runId, 5)
      move.run(5, runId, 6)
      move.run(6, runId, -1)
      sqlite.exec("COMMIT")
    },
    brokenAt: () => 5,
    reason: /prevHash|hash does not match/
  },
  {
    name: "DELETE of a middle event",
    edit: (sqlite, events, runId) => {
      expect(sqlite.prepare(`DELETE FROM ${events} WHERE run_id = ? AND seq = 6`).run(runId).changes).toBe(1)
    },
    brokenAt: () => 6,
    reason: /expected seq 6, found seq 7/
  },
  {
    name: "DELETE of the last event",
    edit: (sqlite, events, runId, last) => {
      expect(sqlite.prepare(`DELETE FROM ${events} WHERE run_id = ? AND seq = ?`).run(runId, last).changes).toBe(1)
    },
    brokenAt: (last) => last,
    reason: /truncated/
  },
  {
    name: "UPDATE of one event's hash",
    edit: (sqlite, events, runId) => {
      // The next row's prev_hash is stored as NULL (the previous row's hash): the forged hash is what it links to.
      expect(sqlite.prepare(`UPDATE ${events} SET hash = randomblob(32) WHERE run_id = ? AND seq = 4`).run(runId).changes).toBe(1)
    },
    brokenAt: () => 4,
    reason: /hash does not match/
  }
]

describe.concurrent("tampering with the database file", () => {
  it.scopedLive.each(TAMPER_CASES)("verify names the first broken seq after an $name", (c) =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "audited"
      const done = yield* inProcess(dir, db, (f) =>
        Effect.flatMap(Kernel.Kernel, (k) => k.execute(f.workflows.crashy, { runId, tenant, input: { order: "o-1" } })))
      expect(done.status).toBe("completed")
      const intact = yield* inspectRun(dir, db, runId)
      expect(intact.report.ok).toBe(true)
      const last = intact.info.headSeq
      expect(last).toBe(11)

      tamper(db, (sqlite, events) => c.edit(sqlite, events, runId, last))

      const { report } = yield* inspectRun(dir, db, runId)
      expect(report.ok).toBe(false)
      expect(report.firstBrokenSeq).toBe(c.brokenAt(last))
      expect(report.reason).toMatch(c.reason)

      // The kernel's reads are verified: replaying the run, or reading its log through the kernel, refuses the broken
      // log rather than serving it.
      const read = yield* Effect.flip(inProcess(dir, db, () => Effect.flatMap(Kernel.Kernel, (k) => k.readEvents({ tenantId: tenant.tenantId, runId }))))
      expect(read).toMatchObject({ _tag: "LogTampered", runId, seq: c.brokenAt(last) })
      const replayed = yield* Effect.flip(inProcess(dir, db, (f) =>
        Effect.flatMap(Kernel.Kernel, (k) => k.replay(f.workflows.crashy, { tenantId: tenant.tenantId, runId }))))
      const again = yield* Effect.either(inProcess(dir, db, (f) =>
        Effect.flatMap(Kernel.Kernel, (k) => k.execute(f.workflows.crashy, { runId, tenant, input: { order: "o-1" } }))))
      if (c.name.startsWith("DELETE of the last")) {
        expect(replayed).toMatchObject({ _tag: "InvalidRunState", status: expect.stringContaining("truncated") })
        expect(again).toEqual(Either.left(expect.objectContaining({ _tag: "InvalidRunState", status: expect.stringContaining("truncated") })))
      } else {
        expect(replayed).toMatchObject({ _tag: "LogTampered", runId, seq: c.brokenAt(last) })
        if (c.brokenAt(last) === last) {
          // A forged output is never returned as the run's result: the head event it is read from is checked.
          expect(again).toEqual(Either.left(expect.objectContaining({ _tag: "LogTampered", runId, seq: last })))
        } else {
          // Executing a completed run again reads its output from its head event alone (O(1) in the run's length),
          // checked against the run record's head hash and its own: intact here, so the output is the one logged.
          expect(again).toEqual(Either.right(done))
        }
      }
    }), TIMEOUT)
})

// --- bad input -----------------------------------------------------------------------------------------------

/** Runs a chat on `db` against a scripted model; returns the result and the requests the model received. */
const chatOn = (dir: string, db: string, runId: string, script: ReadonlyArray<ScriptedModel.Reply>) => {
  const fixture = makeFixture({ dir })
  const scripted = ScriptedModel.make(script)
  return Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const result = yield* kernel.chat({ runId, tenant, messages: [Chat.user("record the order")] })
    expect(scripted.inspector.remaining()).toBe(0)
    return { result, requests: scripted.inspector.requests() }
  }).pipe(Effect.provide(fixture.layer(db, { model: scripted.port })))
}

/** Every row of the run in the file, counted without Artana's code. */
const rowsInFile = (db: string, runId: string) => {
  let count = 0
  tamper(db, (sqlite, events) => {
    const row = sqlite.prepare(`SELECT count(*) AS n FROM ${events} WHERE run_id = ?`).get(runId)
    count = Schema.decodeUnknownSync(Schema.Struct({ n: Schema.Number }))(row).n
  })
  return count
}

describe.concurrent("bad input: typed, actionable errors, nothing lost", () => {
  it.scopedLive("invalid tool arguments from the model are logged with their path and answered; the tool does not run", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "bad-arguments"
      const { requests, result } = yield* chatOn(dir, db, runId, [
        ScriptedModel.toolCall("record", { line: 42 }),
        ScriptedModel.text("could not record it")
      ])
      expect(result).toMatchObject({ status: "completed", output: { output: "could not record it" } })
      expect(lines(paths(dir).effects)).toEqual([])
      const answer = requests[1]!.messages.find((m) => m.role === "tool")
      expect(answer?.content).toContain("InvalidToolArguments")
      expect(answer?.content).toContain("$.line")

      // Read back through a new connection, and straight from the file: everything acknowledged is there.
      const log = yield* inspectRun(dir, db, runId)
      expect(log.report.ok).toBe(true)
      expect(seqs(log.events)).toEqual(oneTo(log.info.headSeq))
      expect(rowsInFile(db, runId)).toBe(log.info.headSeq)
      const failed = log.events.find((e) => e.type === "ToolFailed")?.payload
      expect(failed).toMatchObject({ _tag: "ToolFailed", tool: "record", kind: "invalid_arguments", path: "$.line" })
      expect(failed?._tag === "ToolFailed" && failed.error).toMatch(/string/i)
      expect(typesOf(log.events)).toEqual([
        "RunStarted", "ModelRequested", "ModelCompleted", "ToolRequested", "ToolFailed", "ModelRequested", "ModelCompleted", "RunCompleted"
      ])
    }), TIMEOUT)

  it.scopedLive("an unknown tool name from the model is logged and answered with the registered tools; nothing runs", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "unknown-tool"
      const { requests, result } = yield* chatOn(dir, db, runId, [
        ScriptedModel.toolCall("wire_money", { to: "mallory", amount: 1_000_000 }),
        ScriptedModel.text("that tool does not exist")
      ])
      expect(result.status).toBe("completed")
      expect(lines(paths(dir).effects)).toEqual([])
      const answer = requests[1]!.messages.find((m) => m.role === "tool")
      expect(answer?.content).toContain("UnknownTool")
      expect(answer?.content).toContain("wire_money")

      const log = yield* inspectRun(dir, db, runId)
      expect(log.report.ok).toBe(true)
      expect(rowsInFile(db, runId)).toBe(log.info.headSeq)
      const failed = log.events.find((e) => e.type === "ToolFailed")?.payload
      expect(failed).toMatchObject({ _tag: "ToolFailed", tool: "wire_money", kind: "unknown_tool" })
      expect(failed?._tag === "ToolFailed" && failed.error).toContain("record, send")
    }), TIMEOUT)

  const UNOPENABLE: ReadonlyArray<{ readonly name: string; readonly make: (dir: string) => string; readonly reason: RegExp }> = [
    {
      name: "a path under a regular file",
      make: (dir) => {
        writeFileSync(join(dir, "plain-file"), "not a directory")
        return join(dir, "plain-file", "artana.db")
      },
      reason: /not a directory/
    },
    { name: "a directory", make: (dir) => dir, reason: /directory/ },
    {
      name: "a file that is not a database",
      make: (dir) => {
        const file = join(dir, "notes.db")
        writeFileSync(file, "These are my notes, not a SQLite database. ".repeat(200))
        return file
      },
      reason: /not a SQLite database/
    }
  ]

  it.scopedLive.each(UNOPENABLE)("an unopenable database ($name) is StoreUnavailable naming the path", (c) =>
    Effect.gen(function*() {
      const { dir } = yield* workDir
      const filename = c.make(dir)
      const before = readFileOrUndefined(filename)
      const error = yield* Effect.flip(Layer.build(SqliteStore.layer({ filename })))
      expect(error._tag).toBe("StoreUnavailable")
      expect(error.message).toContain(filename)
      expect(error.message).toMatch(c.reason)
      // Nothing was overwritten.
      expect(readFileOrUndefined(filename)).toEqual(before)
    }), TIMEOUT)

  it.scopedLive("a process given an unopenable database exits with StoreUnavailable naming the path", () =>
    Effect.gen(function*() {
      const { dir } = yield* workDir
      const db = join(dir, "missing", "artana.db")
      const error = errorOf(yield* runChild(baseArgs("execute", { db, dir, runId: "nowhere" })))
      expect(error._tag).toBe("StoreUnavailable")
      expect(error.message).toContain(db)
      expect(error.message).toContain("does not exist")
      expect(lines(paths(dir).effects)).toEqual([])
    }), TIMEOUT)

  it.scopedLive("a schema-invalid human response is InvalidHumanResponse naming the field; the run stays paused", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* workDir
      const runId = "bad-response"
      const outcome = yield* inProcess(dir, db, (f) =>
        Effect.gen(function*() {
          const kernel = yield* Kernel.Kernel
          const paused = yield* kernel.execute(f.workflows.approval, { runId, tenant, input: { amount: 250 } })
          const refused = yield* Effect.flip(kernel.resume({ tenantId: tenant.tenantId, runId, response: { approved: true, by: "ann", limit: "lots" } }))
          return { paused, refused }
        }))
      expect(outcome.paused.status).toBe("paused")
      expect(outcome.refused).toMatchObject({ _tag: "InvalidHumanResponse", runId })
      const message = outcome.refused instanceof Error ? outcome.refused.message : String(outcome.refused)
      expect(message).toContain("$.limit")
      expect(message).toContain("still paused")

      const log = yield* inspectRun(dir, db, runId)
      expect(log.info.status).toBe("paused")
      expect(typesOf(log.events)).toEqual(["RunStarted", "StepCompleted", "PauseRequested"])
      expect(rowsInFile(db, runId)).toBe(3)
      expect(lines(paths(dir).effects)).toEqual([])
    }), TIMEOUT)
})
