// Per-tool approvals on real SQLite files: a run pauses before a call that needs approval, in one process; another
// process approves (or rejects) it and the run goes on; two approvers at once: exactly one decision is written.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import { Artana, type Event, EventStore, Kernel } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { SqliteStore } from "../src/index.js"
import { client, handlerRuns, payout, tenant, transferFunds } from "./approval/payout.js"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./approval/child.ts", import.meta.url))
// The children resolve @artana/core to its sources (as the race's writers do), never to a stale build.
const TSCONFIG = fileURLToPath(new URL("./race/tsconfig.json", import.meta.url))

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-approvals-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const fresh = () => {
  const dir = fs.mkdtempSync(path.join(root, "t-"))
  return { db: path.join(dir, "artana.db"), log: path.join(dir, "handler.log") }
}

interface ChildOutput {
  readonly ok: boolean
  readonly tag?: string
  readonly message?: string
  readonly result?: { readonly status: string; readonly output?: unknown; readonly ticket?: string; readonly approval?: { readonly approvalId: string; readonly arguments: string } }
}

/** Runs ./approval/child.ts to its end; its last stdout line is its outcome. */
const child = (args: ReadonlyArray<string>) =>
  Effect.async<ChildOutput, Error>((resume) => {
    const process_ = execFile(
      process.execPath,
      ["--import", "tsx", CHILD, ...args],
      // A TypeScript loader's cold start each: on a loaded machine over a minute, slow but not wrong.
      { cwd: REPO_ROOT, env: { ...process.env, TSX_TSCONFIG_PATH: TSCONFIG }, timeout: 300_000 },
      (error, stdout, stderr) => {
        try {
          resume(Effect.succeed(JSON.parse(stdout.trim().split("\n").pop() ?? "")))
        } catch {
          resume(Effect.fail(new Error(`child ${args.join(" ")} printed no outcome (${String(error)}): ${stderr}`)))
        }
      }
    )
    return Effect.sync(() => process_.kill("SIGKILL"))
  })

/** The run's log and record, read from the file by this process. */
const readRun = (db: string, runId: string) =>
  Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    return { info: yield* store.getRun("acme", runId), events: yield* store.readEvents("acme", runId) }
  }).pipe(Effect.provide(SqliteStore.layer({ filename: db })))

const types = (events: ReadonlyArray<Event.Event>) => events.map((e) => e.type)

/** Starts a payout in a child process; it pauses for the transfer's approval. */
const startPaused = (db: string, log: string, runId: string) =>
  Effect.gen(function*() {
    const started = yield* child(["start", db, log, runId])
    expect(started).toMatchObject({ ok: true, result: { status: "paused" } })
    const approvalId = started.result!.approval!.approvalId
    expect(approvalId.startsWith(`${runId}@`)).toBe(true)
    return approvalId
  })

describe("per-tool approvals on SQLite", () => {
  it.live("paused in one process, approved with edited arguments in another: the handler runs once, with them", () =>
    Effect.gen(function*() {
      const { db, log } = fresh()
      const approvalId = yield* startPaused(db, log, "pay-1")
      const paused = yield* readRun(db, "pay-1")
      expect(paused.info.status).toBe("paused")
      expect(types(paused.events)).toEqual(["RunStarted", "ModelRequested", "ModelCompleted", "ApprovalRequested"])
      expect(paused.events[3]!.payload).toMatchObject({ tool: "transfer_funds", arguments: '{"to":"acc-9","amount":500}', approvers: ["alice", "bob"] })
      expect(handlerRuns(log)).toEqual([])

      const approved = yield* child(["approve", db, log, approvalId, "alice", JSON.stringify({ to: "acc-9", amount: 250 })])
      expect(approved).toMatchObject({ ok: true, result: { status: "completed", output: "Done" } })
      expect(handlerRuns(log)).toEqual([{ key: "pay-1/tool:1", args: { to: "acc-9", amount: 250 } }])

      const done = yield* readRun(db, "pay-1")
      expect(types(done.events).slice(3)).toEqual([
        "ApprovalRequested",
        "ApprovalDecided",
        "RunResumed",
        "ToolRequested",
        "ToolCompleted",
        "ModelRequested",
        "ModelCompleted",
        "RunCompleted"
      ])
      const decided = done.events[4]!
      expect(decided.payload).toEqual({ _tag: "ApprovalDecided", approvalId, decision: "approved", approver: "alice", arguments: '{"to":"acc-9","amount":250}' })
      expect(decided.timestamp).toBeGreaterThan(0)
      expect(done.events[6]!.payload).toMatchObject({ _tag: "ToolRequested", arguments: '{"to":"acc-9","amount":250}' })
      // The model's next turn saw the result of the approved call.
      const request = done.events[8]!.payload
      expect(request._tag === "ModelRequested" && request.messages.at(-1)).toMatchObject({ role: "tool", content: expect.stringContaining('"amount":250') })

      // A second approval of the same call is refused, naming who decided it; nothing is written.
      const again = yield* child(["approve", db, log, approvalId, "bob"])
      expect(again).toMatchObject({ ok: false, tag: "ApprovalNotPending" })
      expect(again.message).toContain("alice approved it")
      expect((yield* readRun(db, "pay-1")).info.headSeq).toBe(done.info.headSeq)
      expect(handlerRuns(log)).toHaveLength(1)

      // A replay in this process (no model reply scripted, no handler may run): the same output, nothing written.
      const replayer = client(db, log, [])
      const replayed = yield* Effect.promise(() => replayer.replay(payout(log), { tenantId: "acme", runId: "pay-1" }))
      yield* Effect.promise(() => replayer.close())
      expect(replayed).toEqual({ status: "completed", runId: "pay-1", output: "Done" })
      expect((yield* readRun(db, "pay-1")).info.headSeq).toBe(done.info.headSeq)
      expect(handlerRuns(log)).toHaveLength(1)
    }), 600_000)

  it.live("two approvers at once, in two processes: exactly one decision is written and the handler runs at most once", () =>
    Effect.gen(function*() {
      const { db, log } = fresh()
      const approvalId = yield* startPaused(db, log, "pay-race")
      // Released together once both are started (a time chosen in advance came before a start-up on a loaded machine),
      // so that they decide at the same moment.
      const barrier = path.dirname(db)
      const approving = yield* Effect.fork(child(["approve", db, log, approvalId, "alice", JSON.stringify({ to: "acc-1", amount: 100 }), barrier]))
      const rejecting = yield* Effect.fork(child(["reject", db, log, approvalId, "bob", "not this week", barrier]))
      while (!["approve", "reject"].every((mode) => fs.existsSync(path.join(barrier, `${mode}.ready`)))) {
        const ended = [yield* Fiber.poll(approving), yield* Fiber.poll(rejecting)].find(Option.isSome)
        if (ended !== undefined) return yield* Effect.dieMessage(`a child ended before the barrier: ${JSON.stringify(ended.value)}`)
        yield* Effect.sleep("20 millis")
      }
      fs.writeFileSync(path.join(barrier, "go"), "")
      const [a, b] = [yield* Fiber.join(approving), yield* Fiber.join(rejecting)]
      const outcomes = [a, b]
      expect(outcomes.filter((o) => o.ok)).toHaveLength(1)
      expect(outcomes.filter((o) => !o.ok).map((o) => o.tag)).toEqual(["ApprovalNotPending"])
      const { events, info } = yield* readRun(db, "pay-race")
      const decisions = events.filter((e) => e.payload._tag === "ApprovalDecided")
      expect(decisions).toHaveLength(1)
      expect(info.status).toBe("completed")
      const winner = decisions[0]!.payload
      if (winner._tag !== "ApprovalDecided") throw new Error("unreachable")
      expect(handlerRuns(log)).toEqual(winner.decision === "approved" ? [{ key: "pay-race/tool:1", args: { to: "acc-1", amount: 100 } }] : [])
    }), 600_000)

  it.effect("an edit that fails the tool's schema is refused and nothing is written; so is an approver the tool does not name", () =>
    Effect.gen(function*() {
      const { db, log } = fresh()
      const artana = client(db, log, [ScriptedModel.toolCall("transfer_funds", { to: "acc-9", amount: 500 }), ScriptedModel.text("Done")])
      const paused = yield* Effect.promise(() => artana.run(payout(log), { runId: "pay-2", tenant, input: { prompt: "Pay" } }))
      if (paused.status !== "paused" || paused.approval === undefined) throw new Error(`not paused: ${paused.status}`)
      const approvalId = paused.approval.approvalId
      const before = yield* readRun(db, "pay-2")
      const refused = (p: Promise<unknown>) => Effect.promise(() => p.then(() => "resolved", (e: { _tag: string; message: string }) => `${e._tag}: ${e.message}`))

      expect(yield* refused(artana.approve({ tenantId: "acme", approvalId, approver: "alice", arguments: { to: "acc-9", amount: -5 } })))
        .toMatch(/^InvalidToolArguments: .*\$\.amount/)
      expect(yield* refused(artana.approve({ tenantId: "acme", approvalId, approver: "alice", arguments: { to: "acc-9", amount: 5, memo: "x" } })))
        .toMatch(/^InvalidToolArguments: .*\$\.memo/)
      expect(yield* refused(artana.approve({ tenantId: "acme", approvalId, approver: "mallory" }))).toMatch(/^ApproverNotAllowed: mallory may not/)
      const after = yield* readRun(db, "pay-2")
      expect(after.info).toEqual(before.info)
      expect(after.events).toEqual(before.events)
      expect(handlerRuns(log)).toEqual([])

      // Still pending: the inbox lists it, and a valid approval goes through.
      expect((yield* Effect.promise(() => artana.approvals({ tenantId: "acme" }))).map((a) => a.approvalId)).toEqual([approvalId])
      const done = yield* Effect.promise(() => artana.approve({ tenantId: "acme", approvalId, approver: "bob" }))
      expect(done).toMatchObject({ status: "completed", output: "Done" })
      expect(handlerRuns(log)).toEqual([{ key: "pay-2/tool:1", args: { to: "acc-9", amount: 500 } }])
      yield* Effect.promise(() => artana.close())
    }))

  it.effect("a rejection reaches the model as the call's ToolFailed, and a replay of the run is exact", () =>
    Effect.gen(function*() {
      const { db, log } = fresh()
      const script = [ScriptedModel.toolCall("transfer_funds", { to: "acc-9", amount: 500 }), ScriptedModel.text("Understood, no transfer")]
      const model = ScriptedModel.layer(script)
      const layer = Layer.merge(Artana.layer({ store: SqliteStore.layer({ filename: db }), model, tools: [transferFunds(log)], workflows: [payout(log)] }), model)
      const program = Effect.gen(function*() {
        const paused = yield* Artana.run(payout(log), { runId: "pay-3", tenant, input: { prompt: "Pay" } })
        if (paused.status !== "paused" || paused.approval === undefined) throw new Error(`not paused: ${paused.status}`)
        const done = yield* Artana.reject({ tenantId: "acme", approvalId: paused.approval.approvalId, approver: "bob", reason: "the account is frozen", workflow: payout(log) })
        expect(done).toMatchObject({ status: "completed", output: "Understood, no transfer" })
        const second = (yield* ScriptedModel.ScriptedModel).requests()[1]!
        const answer = second.messages.at(-1)!
        expect(answer.role).toBe("tool")
        expect(JSON.parse(answer.content ?? "")).toEqual({ error: "ApprovalRejected", message: 'the call to tool "transfer_funds" was rejected by bob: the account is frozen' })

        const events = yield* Artana.readEvents({ tenantId: "acme", runId: "pay-3" })
        const decided = events.filter((e) => e.stepKey === "tool:1").map((e) => e.payload)
        expect(decided).toEqual([
          expect.objectContaining({ _tag: "ApprovalRequested" }),
          { _tag: "ApprovalDecided", approvalId: paused.approval.approvalId, decision: "rejected", approver: "bob", reason: "the account is frozen" },
          { _tag: "ToolFailed", tool: "transfer_funds", kind: "rejected", error: "the account is frozen" }
        ])
        expect(events.some((e) => e.type === "ToolRequested")).toBe(false)
        expect(handlerRuns(log)).toEqual([])

        // Replay: nothing runs, nothing is written, the same output.
        const head = (yield* Artana.getRun({ tenantId: "acme", runId: "pay-3" })).headSeq
        expect(yield* Artana.replay(payout(log), { tenantId: "acme", runId: "pay-3" })).toMatchObject({ status: "completed", output: "Understood, no transfer" })
        expect((yield* Artana.getRun({ tenantId: "acme", runId: "pay-3" })).headSeq).toBe(head)
        expect((yield* (yield* Kernel.Kernel).verify({ tenantId: "acme", runId: "pay-3" })).ok).toBe(true)
      })
      yield* Effect.scoped(Effect.provide(program, layer))
    }))

  it.effect("the inbox lists a tenant's pending approvals by run, tool and age; another tenant's approval behaves as none", () =>
    Effect.gen(function*() {
      const { db, log } = fresh()
      const script = [
        ScriptedModel.toolCall("transfer_funds", { to: "acc-1", amount: 100 }),
        ScriptedModel.toolCall("transfer_funds", { to: "acc-2", amount: 50 }),
        ScriptedModel.text("Small one done"),
        ScriptedModel.toolCall("transfer_funds", { to: "acc-3", amount: 300 })
      ]
      const artana = client(db, log, script)
      const a = yield* Effect.promise(() => artana.run(payout(log), { runId: "pay-a", tenant, input: { prompt: "Pay acc-1" } }))
      // Under the tool's threshold: no approval, the handler runs at once.
      const b = yield* Effect.promise(() => artana.run(payout(log), { runId: "pay-b", tenant, input: { prompt: "Pay acc-2" } }))
      const c = yield* Effect.promise(() => artana.run(payout(log), { runId: "pay-c", tenant, input: { prompt: "Pay acc-3" } }))
      expect([a.status, b.status, c.status]).toEqual(["paused", "completed", "paused"])
      expect(handlerRuns(log).map((r) => r.args)).toEqual([{ to: "acc-2", amount: 50 }])

      const inbox = yield* Effect.promise(() => artana.approvals({ tenantId: "acme" }))
      expect(inbox.map((p) => [p.runId, p.tool, p.arguments, p.workflow, p.stepKey]).sort()).toEqual([
        ["pay-a", "transfer_funds", '{"to":"acc-1","amount":100}', "payout", "tool:1"],
        ["pay-c", "transfer_funds", '{"to":"acc-3","amount":300}', "payout", "tool:1"]
      ])
      expect((yield* Effect.promise(() => artana.approvals({ tenantId: "acme", runId: "pay-c" }))).map((p) => p.runId)).toEqual(["pay-c"])
      expect(yield* Effect.promise(() => artana.approvals({ tenantId: "acme", runId: "pay-b" }))).toEqual([])
      expect(yield* Effect.promise(() => artana.approvals({ tenantId: "acme", tool: "other_tool" }))).toEqual([])
      expect(yield* Effect.promise(() => artana.approvals({ tenantId: "acme", olderThan: "1 hour" }))).toEqual([])
      expect(yield* Effect.promise(() => artana.approvals({ tenantId: "other" }))).toEqual([])
      // The status of a run paused for approval says so.
      expect(yield* Effect.promise(() => artana.status({ tenantId: "acme", runId: "pay-a" }))).toMatchObject({ status: "paused", approval: { tool: "transfer_funds" } })

      // Another tenant deciding it: the same error as an id that never existed, and nothing written.
      const approvalId = inbox.find((p) => p.runId === "pay-a")!.approvalId
      const head = (yield* readRun(db, "pay-a")).info.headSeq
      const other = yield* Effect.promise(() => artana.approve({ tenantId: "other", approvalId, approver: "alice" }).then(() => "resolved", (e: { message: string }) => e.message))
      const never = yield* Effect.promise(() => artana.approve({ tenantId: "other", approvalId: `pay-zz@${crypto.randomUUID()}`, approver: "alice" }).then(() => "resolved", (e: { message: string }) => e.message))
      expect(other).toBe(`approval ${approvalId} not found for tenant other: list the tenant's pending approvals (\`artana approvals --tenant other\`, or Artana.approvals)`)
      expect(never.replace(/pay-zz@\S+/, "ID")).toBe(other.replace(approvalId, "ID"))
      expect((yield* readRun(db, "pay-a")).info.headSeq).toBe(head)
      // A response meant for a pause answers no approval: refused, nothing written.
      const response = yield* Effect.promise(() => artana.resume({ tenantId: "acme", runId: "pay-a", response: { ok: true } }).then(() => "resolved", (e: { _tag: string }) => e._tag))
      expect(response).toBe("InvalidRunState")
      expect((yield* readRun(db, "pay-a")).info.headSeq).toBe(head)
      yield* Effect.promise(() => artana.close())
    }))

  it.effect("the inbox is oldest waiting first, whatever order the runs were created in, and pages with a cursor through every approval once", () =>
    Effect.gen(function*() {
      const { db, log } = fresh()
      const ms = (n: number) => Effect.promise(() => new Promise<void>((r) => setTimeout(r, n)))
      const script = [
        ScriptedModel.toolCall("transfer_funds", { to: "acc-1", amount: 300 }),
        ScriptedModel.toolCall("transfer_funds", { to: "acc-2", amount: 400 }),
        ScriptedModel.toolCall("transfer_funds", { to: "acc-3", amount: 500 }),
        // The first run, approved, asks again: its new approval is now the latest.
        ScriptedModel.toolCall("transfer_funds", { to: "acc-1", amount: 600 })
      ]
      const artana = client(db, log, script)
      const start = (runId: string, prompt: string) =>
        Effect.promise(() => artana.run(payout(log), { runId, tenant, input: { prompt } }))
      expect((yield* start("early", "Pay acc-1")).status).toBe("paused")
      yield* ms(5)
      expect((yield* start("mid", "Pay acc-2")).status).toBe("paused")
      yield* ms(5)
      expect((yield* start("late", "Pay acc-3")).status).toBe("paused")
      yield* ms(5)
      const [first] = yield* Effect.promise(() => artana.approvals({ tenantId: "acme", limit: 1 }))
      // The longest waiting: the run created first, which paused first (the runs index's order put it last).
      expect(first?.runId).toBe("early")
      expect((yield* Effect.promise(() => artana.approve({ tenantId: "acme", approvalId: first!.approvalId, approver: "alice" }))).status).toBe("paused")

      const all = yield* Effect.promise(() => artana.approvals({ tenantId: "acme" }))
      expect(all.map((p) => [p.runId, p.arguments])).toEqual([
        ["mid", '{"to":"acc-2","amount":400}'],
        ["late", '{"to":"acc-3","amount":500}'],
        ["early", '{"to":"acc-1","amount":600}']
      ])
      expect(all.map((p) => p.requestedAt)).toEqual([...all.map((p) => p.requestedAt)].sort((a, b) => a - b))
      // A page at a time: each approval once, in the same order; the last page has no cursor.
      for (const limit of [1, 2]) {
        const seen: Array<string> = []
        let after: string | undefined
        let pages = 0
        do {
          const page = yield* Effect.promise(() => artana.approvalsPage({ tenantId: "acme", limit, ...(after === undefined ? {} : { after }) }))
          seen.push(...page.approvals.map((p) => p.runId))
          after = page.next
          pages++
        } while (after !== undefined)
        expect(seen).toEqual(["mid", "late", "early"])
        expect(pages).toBe(Math.ceil(3 / limit))
      }
      // The filters hold across pages: of one tool, and asked at least so long ago.
      const page = yield* Effect.promise(() => artana.approvalsPage({ tenantId: "acme", tool: "transfer_funds", limit: 1 }))
      expect(page.approvals.map((p) => p.runId)).toEqual(["mid"])
      const rest = yield* Effect.promise(() => artana.approvalsPage({ tenantId: "acme", tool: "transfer_funds", after: page.next }))
      expect(rest.approvals.map((p) => p.runId)).toEqual(["late", "early"])
      expect(rest.next).toBeUndefined()
      expect(yield* Effect.promise(() => artana.approvalsPage({ tenantId: "acme", olderThan: "1 hour" }))).toEqual({ approvals: [] })
      // A cursor no page gave out is bad input.
      const bad = yield* Effect.promise(() => artana.approvalsPage({ tenantId: "acme", after: "nope" }).then(() => "resolved", (e: { _tag: string }) => e._tag))
      expect(bad).toBe("InvalidInput")
      yield* Effect.promise(() => artana.close())
    }))

  it.effect("a signal sent to a run waiting for approval moves neither its place in the inbox nor its age", () =>
    Effect.gen(function*() {
      const { db, log } = fresh()
      const ms = (n: number) => Effect.promise(() => new Promise<void>((r) => setTimeout(r, n)))
      const artana = client(db, log, [
        ScriptedModel.toolCall("transfer_funds", { to: "acc-1", amount: 300 }),
        ScriptedModel.toolCall("transfer_funds", { to: "acc-2", amount: 400 })
      ])
      const start = (runId: string) => Effect.promise(() => artana.run(payout(log), { runId, tenant, input: { prompt: `Pay for ${runId}` } }))
      expect((yield* start("first")).status).toBe("paused")
      yield* ms(20)
      expect((yield* start("second")).status).toBe("paused")
      const [asked] = yield* Effect.promise(() => artana.approvals({ tenantId: "acme", runId: "second" }))
      yield* ms(200)
      // The first run's head moves past the second's pause: it is still the longest waiting, and as old as it was.
      yield* Effect.promise(() => artana.signal({ tenantId: "acme", runId: "first", name: "note", payload: { text: "any news?" } }))
      const { info, events } = yield* readRun(db, "first")
      expect(types(events).at(-1)).toBe("SignalSent")
      expect(info.status).toBe("paused")
      const inbox = yield* Effect.promise(() => artana.approvals({ tenantId: "acme" }))
      expect(inbox.map((p) => p.runId)).toEqual(["first", "second"])
      // Asked at or before the second's time: the first (signalled since) is old enough, the second too.
      const before = yield* Effect.promise(() => artana.approvalsPage({ tenantId: "acme", olderThan: `${Date.now() - asked!.requestedAt} millis` }))
      expect(before.approvals.map((p) => p.runId)).toEqual(["first", "second"])
      yield* Effect.promise(() => artana.close())
    }))
})

