// The run record (status, cost) is held to its verified log, on a real SQLite file: edits found in review.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer, Schema } from "effect"
import { SqlClient } from "@effect/sql"
import { Chat, EventStore, Kernel, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-review-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
let n = 0
const tempDb = () => path.join(root, `db-${n++}.db`)

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 0.01 })

/** Model step, pause for a person, model step. */
const spender = Workflow.make({
  name: "spender",
  input: Schema.Null,
  output: Schema.String,
  run: (_i, ctx) =>
    Effect.gen(function*() {
      yield* ctx.modelStep({ messages: [Chat.user("first")], maxOutputTokens: 1000, key: "m0" })
      yield* ctx.pauseForHuman({ reason: "approve the second call", key: "p" })
      const second = yield* ctx.modelStep({ messages: [Chat.user("second")], maxOutputTokens: 1000, key: "m1" })
      return second.message.content ?? ""
    })
})

const kernelOn = (filename: string, script: ReadonlyArray<ScriptedModel.Reply>, model = "gpt-4o-mini") =>
  Effect.map(
    Layer.build(
      Layer.provideMerge(
        Kernel.layer({ workflows: [spender] }),
        Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer(script, { model }), ToolRegistry.layer([]))
      )
    ),
    (context) => ({
      kernel: Context.get(context, Kernel.Kernel),
      sql: Context.get(context, SqlClient.SqlClient),
      store: Context.get(context, EventStore.EventStore),
      scripted: Context.get(context, ScriptedModel.ScriptedModel)
    })
  )

describe("the run record is checked against its log", () => {
  it.scoped("an edited runs.cost_usd is caught by verify and refused by the kernel (LogTampered), not a reset budget", () =>
    Effect.gen(function*() {
      const { kernel, scripted, sql } = yield* kernelOn(tempDb(), [
        // $0.0099 of $0.01 spent by the first call.
        ScriptedModel.text("first", { usage: { inputTokens: 10, outputTokens: 10 }, costUsd: 0.0099 }),
        ScriptedModel.text("second", { usage: { inputTokens: 10, outputTokens: 10 }, costUsd: 0.0099 })
      ])
      const paused = yield* kernel.execute(spender, { runId: "r1", tenant, input: null })
      expect(paused.status).toBe("paused")
      // A hand edit of the run's projection row, not of any event.
      yield* sql`UPDATE runs SET cost_usd = 0 WHERE run_id = 'r1'`
      const report = yield* kernel.verify({ tenantId: "acme", runId: "r1" })
      const resumed = yield* Effect.either(kernel.resume({ tenantId: "acme", runId: "r1", response: "ok" }))
      // Without the edit, the second call (estimate: 1000 output tokens, $0.0006) is refused before the request.
      expect({
        verifyOk: report.ok,
        modelCalls: scripted.calls(),
        outcome: Either.isLeft(resumed) ? (resumed.left as { _tag: string })._tag : resumed.right.status
      }).toEqual({ verifyOk: false, modelCalls: 1, outcome: "LogTampered" })
    }))

  it.scoped("without the edit, the same run is refused the second call (control)", () =>
    Effect.gen(function*() {
      const { kernel, scripted } = yield* kernelOn(tempDb(), [
        ScriptedModel.text("first", { usage: { inputTokens: 10, outputTokens: 10 }, costUsd: 0.0099 }),
        ScriptedModel.text("second", { usage: { inputTokens: 10, outputTokens: 10 }, costUsd: 0.0099 })
      ])
      yield* kernel.execute(spender, { runId: "r1", tenant, input: null })
      const resumed = yield* Effect.either(kernel.resume({ tenantId: "acme", runId: "r1", response: "ok" }))
      expect(Either.isLeft(resumed) && (resumed.left as { _tag: string })._tag).toBe("BudgetExceeded")
      expect(scripted.calls()).toBe(1)
    }))

  it.scoped("an edited runs.status is caught by verify and refused by the kernel, not served as truth", () =>
    Effect.gen(function*() {
      const { kernel, sql } = yield* kernelOn(tempDb(), [
        ScriptedModel.text("first", { usage: { inputTokens: 10, outputTokens: 10 }, costUsd: 0.0001 }),
        ScriptedModel.text("second", { usage: { inputTokens: 10, outputTokens: 10 }, costUsd: 0.0001 })
      ])
      yield* kernel.execute(spender, { runId: "r2", tenant, input: null })
      const done = yield* kernel.resume({ tenantId: "acme", runId: "r2", response: "ok" })
      expect(done.status).toBe("completed")
      yield* sql`UPDATE runs SET status = 'failed' WHERE run_id = 'r2'`
      const report = yield* kernel.verify({ tenantId: "acme", runId: "r2" })
      const again = yield* Effect.either(kernel.execute(spender, { runId: "r2", tenant, input: null }))
      expect({ verifyOk: report.ok, outcome: Either.isLeft(again) ? (again.left as { _tag: string })._tag : again.right.status })
        .toEqual({ verifyOk: false, outcome: "LogTampered" })
    }))

describe("an infinite budget", () => {
  it("is refused when the tenant is made: a budget the log cannot hold (JSON has no Infinity) is no budget", () => {
    expect(() => Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: Number.POSITIVE_INFINITY })).toThrow(/finite/)
  })
})

describe("a model name that prices as NaN", () => {
  it.scoped("a run on the model 'constructor' is refused as unpriced; it is not called, and its log stays readable", () =>
    Effect.gen(function*() {
      const { kernel, scripted, store } = yield* kernelOn(tempDb(), [
        ScriptedModel.text("first", { usage: { inputTokens: 10, outputTokens: 10 } }),
        ScriptedModel.text("second", { usage: { inputTokens: 10, outputTokens: 10 } })
      ], "constructor")
      const first = yield* Effect.either(kernel.execute(spender, { runId: "proto", tenant, input: null }))
      const read = yield* Effect.either(store.readEvents("acme", "proto"))
      expect({
        outcome: Either.isLeft(first) ? (first.left as { _tag: string })._tag : first.right.status,
        modelCalls: scripted.calls(),
        logReadable: Either.isRight(read) ? true : (read.left as Error).message.slice(0, 80)
      }).toEqual({ outcome: "BudgetUnpriced", modelCalls: 0, logReadable: true })
    }))
})
})
