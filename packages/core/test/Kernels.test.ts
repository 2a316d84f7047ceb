import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Artana, Errors, EventStore, Kernel, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"

const acme = { tenantId: "acme", capabilities: ["crm:read"], budgetUsdLimit: 1 }

describe("the three kernels are services", () => {
  it.effect("the state kernel and the tool kernel are services a user replaces by a layer", () => {
    // State kernel: the user's store (the in-memory one, with every batch mirrored to an audit list).
    const mirrored: Array<string> = []
    const store = Layer.effect(
      EventStore.EventStore,
      Effect.map(EventStore.EventStore, (inner): EventStore.Service => ({
        ...inner,
        append: (request) => Effect.tap(inner.append(request), () => mirrored.push(...request.events.map((e) => `${e.seq}:${e.type}`)))
      }))
    ).pipe(Layer.provide(EventStore.layerMemory))
    // Tool kernel: the user's registry, which finds tools in a catalogue that changes after the runtime is built.
    const catalogue = new Map<string, Tool.Tool>()
    const tools = Layer.succeed(ToolRegistry.ToolRegistry, { get: (name) => catalogue.get(name), list: () => [...catalogue.values()] })
    const lookup = Tool.make({
      name: "crm_lookup",
      description: "Finds a customer",
      parameters: Schema.Struct({ name: Schema.String }),
      requiresCapability: "crm:read",
      idempotent: true,
      handler: ({ name }) => Effect.succeed({ name, tier: "gold" })
    })
    const model = ScriptedModel.layer([ScriptedModel.toolCall("crm_lookup", { name: "Ann" }), ScriptedModel.text("Ann is gold")])
    return Effect.gen(function*() {
      catalogue.set(lookup.name, lookup)
      const result = yield* Artana.chat({ runId: "k-1", tenant: acme, prompt: "Who is Ann?" })
      expect(result.status === "completed" && result.output).toBe("Ann is gold")
      const inspector = yield* ScriptedModel.ScriptedModel
      expect(inspector.requests()[0]!.tools.map((t) => t.name)).toEqual(["crm_lookup"])
      const events = yield* Artana.readEvents({ tenantId: "acme", runId: "k-1" })
      expect(mirrored).toEqual(events.map((e) => `${e.seq}:${e.type}`))
      expect(events.map((e) => e.type)).toContain("ToolCompleted")
      expect((yield* Artana.verify({ tenantId: "acme", runId: "k-1" })).ok).toBe(true)
    }).pipe(Effect.provide(Layer.merge(Artana.layer({ store, tools, model }), model)))
  })

  it.effect("the orchestration kernel is a service a user replaces by a layer: every accessor goes through it", () => {
    // Orchestration kernel: the user's own, here a change freeze around the built one: runs of tenants on the freeze
    // list are refused before anything is logged, every other operation is counted and handed on.
    const operations: Array<string> = []
    const frozen = new Set(["globex"])
    const freeze = Layer.effect(
      Kernel.Kernel,
      Effect.map(Kernel.Kernel, (inner): Kernel.Service => ({
        ...inner,
        execute: (workflow, options) =>
          frozen.has(options.tenant.tenantId)
            ? Effect.fail(new Errors.InvalidInput({ what: `run of tenant ${options.tenant.tenantId}`, reason: "the tenant is in a change freeze" }))
            : Effect.suspend(() => {
              operations.push(`execute ${workflow.name}`)
              return inner.execute(workflow, options)
            }),
        chat: (options) =>
          Effect.suspend(() => {
            operations.push("chat")
            return inner.chat(options)
          })
      }))
    )
    const model = ScriptedModel.layer([ScriptedModel.text("hello")])
    const base = Artana.layer({ model })
    const greet = Workflow.make({
      name: "greet",
      input: Schema.Struct({ name: Schema.String }),
      output: Schema.String,
      run: ({ name }, ctx) => ctx.step("greeting", Effect.succeed(`hello ${name}`), Schema.String)
    })
    return Effect.gen(function*() {
      expect(yield* Artana.chat({ runId: "c-1", tenant: acme, prompt: "Hi" })).toMatchObject({ status: "completed", output: "hello" })
      expect(yield* Artana.run(greet, { runId: "g-1", tenant: acme, input: { name: "Ann" } })).toMatchObject({ status: "completed", output: "hello Ann" })
      const refused = yield* Effect.flip(Artana.run(greet, { runId: "g-2", tenant: { ...acme, tenantId: "globex" }, input: { name: "Bo" } }))
      expect(refused).toMatchObject({ _tag: "InvalidInput", reason: "the tenant is in a change freeze" })
      expect(operations).toEqual(["chat", "execute greet"])
      // Nothing of the refused run reached the state kernel; the others are there, verified.
      expect(yield* Effect.flip(Artana.status({ tenantId: "globex", runId: "g-2" }))).toMatchObject({ _tag: "RunNotFound" })
      expect((yield* Artana.verify({ tenantId: "acme", runId: "g-1" })).ok).toBe(true)
    }).pipe(Effect.provide(Layer.provideMerge(freeze, base)))
  })
})
