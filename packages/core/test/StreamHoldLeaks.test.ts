// A stream past its hold takes more room in the kernel's memory. However the call ends (its model
// fails, the run is interrupted, it finishes), nothing is held for the lineage after: a call
// for all the room the lineage has left is then sent.
import { describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 10 })
const rootWorkflow = Workflow.make({ name: "root", input: Schema.Null, output: Schema.Null, run: () => Effect.succeed(null) })
const call = Workflow.make({
  name: "call",
  input: Schema.Struct({ prompt: Schema.String, cap: Schema.Number }),
  output: Schema.String,
  run: ({ cap, prompt }, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user(prompt)], maxOutputTokens: cap, key: "m" }), (r) => String(r.message.content))
})
const token: ModelPort.StreamPart = { _tag: "TextDelta", text: "aaaa" }
type End = "fails" | "interrupted" | "stopped" | "finishes"

describe("in-memory holds after a stream past its hold", () => {
  for (const end of ["fails", "interrupted", "finishes"] as const satisfies ReadonlyArray<End>) {
    it.live(`the call ${end}: nothing is held after`, () =>
      Effect.gen(function*() {
        const past = yield* Deferred.make<void>()
        const port = ModelPort.make({
          defaultModel: "m",
          prices: { m: { input: 0, cachedInput: 0, output: 10_000 } },
          generate: () => Effect.die("streamed"),
          stream: (request) =>
            request.messages[0]?.content !== "x"
              ? Stream.succeed<ModelPort.StreamPart>({ _tag: "Finished", response: { model: request.model, message: { role: "assistant", content: "ok" }, usage: { inputTokens: 0, outputTokens: 1 } } })
              : Stream.concat(
                // 150 tokens (past its hold of 100), then the end.
                Stream.fromIterable(Array.from({ length: 150 }, () => token)),
                Stream.concat(
                  Stream.drain(Stream.fromEffect(Deferred.succeed(past, undefined))),
                  end === "fails"
                    ? Stream.fail(new Error("boom") as never)
                    : end === "interrupted"
                    ? Stream.fromEffect(Effect.never)
                    : Stream.succeed<ModelPort.StreamPart>({ _tag: "Finished", response: { model: request.model, message: { role: "assistant", content: "x" }, usage: { inputTokens: 0, outputTokens: 150 } } })
                )
              )
        })
        const layer = Kernel.layer().pipe(Layer.provideMerge(Layer.mergeAll(EventStore.layerMemory, Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([]))))
        return yield* Effect.gen(function*() {
          const kernel = yield* Kernel.Kernel
          const store = yield* EventStore.EventStore
          yield* kernel.execute(rootWorkflow, { runId: "root", tenant, input: null })
          const x = yield* Effect.fork(Effect.either(kernel.execute(call, { runId: "root::x", tenant, input: { prompt: "x", cap: 100 }, parentRunId: "root" })))
          if (end === "interrupted") {
            yield* Deferred.await(past)
            yield* Fiber.interrupt(x)
          } else yield* Fiber.join(x)
          const spent = yield* store.lineageCostUsd("acme", "root")
          // All the room left, to the cent.
          const cap = Math.floor((tenant.budgetUsdLimit - spent) * 100 + 1e-9)
          const probe = yield* Effect.either(kernel.execute(call, { runId: "root::probe", tenant, input: { prompt: "probe", cap }, parentRunId: "root" }))
          expect({ spent, probe: probe._tag === "Right" ? probe.right.status : probe.left._tag }).toMatchObject({ probe: "completed" })
        }).pipe(Effect.provide(layer))
      }))
  }
})
