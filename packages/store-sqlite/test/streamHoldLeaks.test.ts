// A stream past its hold asks the file for more room in a fiber of its own, answered while deltas go on. However the
// call ends while that request is in flight (the stream finishes, the model fails, the run is interrupted), no hold is
// left in budget_holds once the run ended.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { BudgetHolds, Chat, Kernel, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqliteStore } from "../src/index.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-stream-holds-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
let n = 0
const tempDb = () => path.join(root, `holds-${n++}.db`)

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 10 })
const oneCall = Workflow.make({
  name: "one-call",
  input: Schema.Null,
  output: Schema.String,
  run: (_i, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user("x")], maxOutputTokens: 100, key: "m" }), (r) => String(r.message.content))
})
const token: ModelPort.StreamPart = { _tag: "TextDelta", text: "aaaa" }

type End = "finished" | "failed" | "interrupted"

const run = (end: End) =>
  Effect.gen(function*() {
    const filename = tempDb()
    const asked = yield* Deferred.make<void>()
    // The stream's requests are written at once and answered 200 ms later (a slow round trip): the call ends, or is
    // interrupted, with the hold in the file and its answer on its way.
    const slow = Layer.effect(
      BudgetHolds.BudgetHolds,
      Effect.map(BudgetHolds.BudgetHolds, (holds): BudgetHolds.Service => ({
        ...holds,
        hold: (r) =>
          r.callId?.includes("#stream") === true
            ? Effect.tap(holds.hold(r), () => Effect.zipRight(Deferred.succeed(asked, undefined), Effect.sleep("200 millis")))
            : holds.hold(r)
      }))
    )
    const port = ModelPort.make({
      defaultModel: "m",
      prices: { m: { input: 0, cachedInput: 0, output: 10_000 } },
      generate: () => Effect.die("streamed"),
      // 101 tokens (its hold passed), then the end while the request is in flight.
      stream: (request) =>
        Stream.concat(
          Stream.fromIterable(Array.from({ length: 101 }, () => token)),
          end === "finished"
            ? Stream.succeed<ModelPort.StreamPart>({ _tag: "Finished", response: { model: request.model, message: { role: "assistant", content: "aaaa".repeat(101) }, usage: { inputTokens: 0, outputTokens: 101 } } })
            : end === "failed"
            ? Stream.fail(new (class extends Error {})() as never)
            : Stream.fromEffect(Effect.never)
        )
    })
    const context = yield* Layer.build(Kernel.layer().pipe(
      Layer.provideMerge(Layer.mergeAll(Layer.provideMerge(slow, SqliteStore.layer({ filename })), Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
    ))
    const kernel = Context.get(context, Kernel.Kernel)
    const sql = Context.get(context, SqlClient.SqlClient)
    const fiber = yield* Effect.fork(Effect.either(kernel.execute(oneCall, { runId: "r", tenant, input: null })))
    yield* Deferred.await(asked)
    if (end === "interrupted") yield* Fiber.interrupt(fiber)
    else yield* Fiber.await(fiber)
    const rows = yield* sql<{ hold_id: string; call_id: string }>`SELECT hold_id, call_id FROM budget_holds`
    return rows.map((r) => r.call_id)
  })

describe("holds left behind by a stream's pending request", () => {
  for (const end of ["finished", "failed", "interrupted"] as const) {
    it.scopedLive(`the call ${end} while the request was in flight: nothing is held after`, () =>
      Effect.gen(function*() {
        expect(yield* run(end)).toEqual([])
      }), 20_000)
  }
})
