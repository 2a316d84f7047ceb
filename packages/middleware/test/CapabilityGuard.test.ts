import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import type { Workflow } from "@artana/core"
import { Chat, EventStore, Kernel, Middleware, Tenant, Tool, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { CapabilityGuard } from "@artana/middleware"

const tenant = (budgetUsdLimit: number, capabilities: ReadonlyArray<string> = []) =>
  Tenant.TenantContext.make({ tenantId: "acme", capabilities, budgetUsdLimit })

const layer = (
  script: ReadonlyArray<ScriptedModel.Reply>,
  chain: ReadonlyArray<Middleware.Interceptor>,
  options: { readonly model?: string; readonly tools?: ReadonlyArray<Tool.Tool>; readonly workflows?: ReadonlyArray<Workflow.Any> } = {}
) => {
  const model = ScriptedModel.layer(script, { model: options.model ?? "gpt-4o-mini" })
  const base = Layer.mergeAll(EventStore.layerMemory, model, ToolRegistry.layer(options.tools ?? []), Middleware.layer(chain).pipe(Layer.provide(model)))
  return Layer.provideMerge(Kernel.layer({ workflows: options.workflows }), base)
}

describe("CapabilityGuard", () => {
  const wire = Tool.make({
    name: "bank.wire",
    description: "Wires money",
    parameters: Schema.Struct({ amount: Schema.Number }),
    handler: () => Effect.succeed("wired")
  })
  let calls = 0
  const lookup = Tool.make({
    name: "lookup",
    description: "Looks up",
    parameters: Schema.Struct({}),
    handler: () => Effect.sync(() => (calls++, "found"))
  })

  it.effect("strips tools the tenant lacks under its rules, notes it, and denies a call anyway", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      yield* kernel.chat({ runId: "guard", tenant: tenant(1, ["search"]), messages: [Chat.user("wire 5")] })
      expect(scripted.requests()[0]!.tools.map((t) => t.name)).toEqual(["lookup"])
      const store = yield* EventStore.EventStore
      const events = yield* store.readEvents("acme", "guard")
      const stripped = events.find((e) => e.payload._tag === "MiddlewareNote" && e.payload.note === "tools_stripped")!.payload
      expect(stripped).toMatchObject({ data: { tools: ["bank.wire"] } })
      const denied = events.find((e) => e.payload._tag === "PolicyDenied")!.payload
      expect(denied).toMatchObject({ tool: "bank.wire", capability: "finance:write", middleware: "capability-guard" })
      expect(events.some((e) => e.payload._tag === "ToolCompleted" && e.payload.tool === "bank.wire")).toBe(false)
      expect(calls).toBe(1)
    }).pipe(Effect.provide(layer([
      { content: null, toolCalls: [{ name: "bank.wire", arguments: { amount: 5 } }, { name: "lookup", arguments: {} }] },
      ScriptedModel.text("could not wire")
    ], [CapabilityGuard.middleware({ require: { "bank.*": "finance:write", lookup: "search" } })], { tools: [wire, lookup], model: "gpt-4o-mini" }))))

  // An MCP or plugin tool always requires a capability of its own (`mcp:<server>`): a deployment's stricter rule for
  // one of its tools must still hold when the tenant has the tool's own one.
  let written = 0
  const writeNote = Tool.make({
    name: "notes.write_note",
    description: "Writes a note",
    parameters: Schema.Struct({ text: Schema.String }),
    requiresCapability: "mcp:notes",
    handler: () => Effect.sync(() => (written++, "written"))
  })

  it.effect("a rule holds for a tool that requires a capability of its own: hidden from the model, and a call to it denied", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const scripted = yield* ScriptedModel.ScriptedModel
      yield* kernel.chat({ runId: "guard-own", tenant: tenant(1, ["mcp:notes"]), messages: [Chat.user("write it")] })
      expect(scripted.requests()[0]!.tools.map((t) => t.name)).toEqual([])
      const events = yield* (yield* EventStore.EventStore).readEvents("acme", "guard-own")
      expect(events.find((e) => e.payload._tag === "PolicyDenied")?.payload).toMatchObject({ tool: "notes.write_note", capability: "notes:write" })
      expect(written).toBe(0)
    }).pipe(Effect.provide(layer([
      { content: null, toolCalls: [{ name: "notes.write_note", arguments: { text: "pwned" } }] },
      ScriptedModel.text("could not write")
    ], [CapabilityGuard.middleware({ require: { "notes.write_note": "notes:write" } })], { tools: [writeNote] }))))
})

