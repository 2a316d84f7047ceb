// a worker frozen (SIGSTOP, a long GC) just before a model call, whose lease ran out and whose run another
// worker took over, wakes and makes the call. Its budget hold is for the same call (run, step key) as the new owner's,
// so it replaces (deletes) the new owner's hold while that owner's call is still in flight; its own hold is released
// once its append is fenced. The lineage's other calls then see room that the in-flight call will spend: the lineage
// spends past its budget. (And the stale worker's own call was sent, and billed, with its lease run out.)
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, type Lease, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { Context, Deferred, Effect, Either, Fiber, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqliteStore } from "../src/index.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-stale-hold-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

/** Room for two calls of at most one output token ($1 each). */
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 2.5 })

const rootWorkflow = Workflow.make({ name: "root", input: Schema.Null, output: Schema.Null, run: () => Effect.succeed(null) })

/** A model at $1 an output token; its first call waits for `open`, the others answer at once. */
const model = (open: Deferred.Deferred<void>) => {
  let calls = 0
  const port = ModelPort.make({
    defaultModel: "m",
    prices: { m: { input: 0, cachedInput: 0, output: 1_000_000 } },
    generate: (request) =>
      Effect.suspend(() => {
        calls++
        const reply = { model: request.model, message: { role: "assistant" as const, content: "answer" }, usage: { inputTokens: 1, outputTokens: 1 } }
        return calls === 1 ? Effect.as(Deferred.await(open), reply) : Effect.succeed(reply)
      })
  })
  return { port, calls: () => calls }
}

const kernelOn = (filename: string, port: ModelPort.Service) =>
  Effect.map(
    Layer.build(Kernel.layer().pipe(
      Layer.provideMerge(Layer.mergeAll(SqliteStore.layer({ filename }), Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
    )),
    (context) => ({ kernel: Context.get(context, Kernel.Kernel), store: Context.get(context, EventStore.EventStore) })
  )

describe("a stale worker's model call", () => {
  it.scopedLive("does not take the new owner's budget hold away: the lineage never spends past its budget", () =>
    Effect.gen(function*() {
      const filename = path.join(root, "stale.db")
      const open = yield* Deferred.make<void>()
      const m = model(open)
      const frozen = yield* Deferred.make<void>()
      const thawed = yield* Deferred.make<void>()
      let firstExecution = true
      const child = Workflow.make({
        name: "child",
        input: Schema.Null,
        output: Schema.String,
        run: (_input, ctx) =>
          Effect.gen(function*() {
            // The first execution (worker A) freezes here, just before its model call.
            if (ctx.runId === "root::sub_agent::0" && firstExecution) {
              firstExecution = false
              yield* Deferred.succeed(frozen, undefined)
              yield* Deferred.await(thawed)
            }
            const r = yield* ctx.modelStep({ messages: [Chat.user("hi")], maxOutputTokens: 1, key: "m" })
            return String(r.message.content)
          })
      })
      const a = yield* kernelOn(filename, m.port)
      const b = yield* kernelOn(filename, m.port)
      yield* a.kernel.execute(rootWorkflow, { runId: "root", tenant, input: null })
      // Worker A's lease: good for a minute, until it is frozen past it.
      let aExpires = Date.now() + 60_000
      const aLease: Lease.Lease = { expiresAt: () => aExpires, signal: new AbortController().signal }
      const bLease: Lease.Lease = { expiresAt: () => Date.now() + 60_000, signal: new AbortController().signal }
      const aRun = yield* Effect.fork(Effect.either(a.kernel.execute(child, { runId: "root::sub_agent::0", tenant, input: null, parentRunId: "root", lease: aLease })))
      yield* Deferred.await(frozen)
      aExpires = Date.now() - 1 // A stays frozen past its lease; worker B takes the task over.
      const bRun = yield* Effect.fork(Effect.either(b.kernel.execute(child, { runId: "root::sub_agent::0", tenant, input: null, parentRunId: "root", lease: bLease })))
      while (m.calls() < 1) yield* Effect.sleep("10 millis") // B's call is in flight, under its hold.
      // A wakes up.
      yield* Deferred.succeed(thawed, undefined)
      const aResult = yield* Fiber.join(aRun)
      expect(Either.isLeft(aResult)).toBe(true)
      // Two more sub-runs of the lineage, while B's call is still in flight: at most one of them fits the budget.
      const others = yield* Effect.forEach([1, 2], (i) =>
        Effect.either(b.kernel.execute(child, { runId: `root::sub_agent::${i}`, tenant, input: null, parentRunId: "root" })))
      yield* Deferred.succeed(open, undefined)
      yield* Fiber.join(bRun)
      const lineage = yield* a.store.listRuns("acme", { rootRunId: "root" })
      const spent = lineage.reduce((sum, r) => sum + r.costUsd, 0)
      expect(spent).toBeLessThanOrEqual(tenant.budgetUsdLimit)
      // One sibling fits beside B's held call; the other is refused before its call.
      expect(others.map((o) => (Either.isLeft(o) ? o.left._tag : o.right.status))).toEqual(["completed", "BudgetExceeded"])
      // A, its lease run out, sent nothing: B's call and one sibling's.
      expect(m.calls()).toBe(2)
    }))
})
