// How a tool call is logged: two commits (request, then outcome) by default; one commit after the handler for an
// idempotent tool that asks for it, or under the kernel's default. Crashes in each mode: store-sqlite's recovery tests.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { EventStore, Kernel, Tool, Workflow } from "@artana/core"
import { kernelLayer, tenant } from "./fixtures.js"

/** The memory store, counting its appends (each is one commit on a SQL store). */
const countingStore = () => {
  const commits: Array<ReadonlyArray<string>> = []
  const layer = Layer.effect(
    EventStore.EventStore,
    Effect.map(EventStore.makeMemory, (store) => ({
      ...store,
      append: (request: EventStore.AppendRequest) =>
        Effect.tap(store.append(request), () => Effect.sync(() => commits.push(request.events.map((e) => e.type))))
    }))
  )
  return { commits, layer }
}

const toolNamed = (name: string, options: { readonly idempotent: boolean; readonly durability?: Tool.Durability }) =>
  Tool.make({ name, description: name, parameters: Schema.Struct({ n: Schema.Number }), ...options, handler: ({ n }) => Effect.succeed(n) })

const oneCallOf = (tool: Tool.Tool) =>
  Workflow.make({ name: `one-${tool.name}`, input: Schema.Null, output: Schema.Unknown, run: (_input, ctx) => ctx.tool(tool, { n: 1 }) })

const commitsOfOneCall = (tool: Tool.Tool, kernel: Kernel.Options = {}) => {
  const store = countingStore()
  return Effect.gen(function*() {
    const k = yield* Kernel.Kernel
    const result = yield* k.execute(oneCallOf(tool), { runId: "r", tenant, input: null })
    expect(result).toMatchObject({ status: "completed", output: 1 })
    // A replay reads the same two events either way.
    expect(yield* k.replay(oneCallOf(tool), { tenantId: tenant.tenantId, runId: "r" })).toEqual(result)
    return store.commits.filter((c) => c.includes("ToolRequested") || c.includes("ToolCompleted"))
  }).pipe(Effect.provide(kernelLayer([], [tool], { store: store.layer, kernel })))
}

describe("tool call durability", () => {
  it.effect("two-phase by default: the request is committed before the handler, the outcome after", () =>
    Effect.gen(function*() {
      expect(yield* commitsOfOneCall(toolNamed("plain", { idempotent: true }))).toEqual([["ToolRequested"], ["ToolCompleted"]])
    }))

  it.effect("one commit for an idempotent tool that asks for it: request and outcome together, after the handler", () =>
    Effect.gen(function*() {
      expect(yield* commitsOfOneCall(toolNamed("fast", { idempotent: true, durability: "one-commit" }))).toEqual([["ToolRequested", "ToolCompleted"]])
    }))

  it.effect("the kernel's default applies to idempotent tools that do not say, never to others, and a tool's own choice wins", () =>
    Effect.gen(function*() {
      const oneCommit: Kernel.Options = { idempotentToolDurability: "one-commit" }
      expect(yield* commitsOfOneCall(toolNamed("lookup", { idempotent: true }), oneCommit)).toEqual([["ToolRequested", "ToolCompleted"]])
      expect(yield* commitsOfOneCall(toolNamed("pay", { idempotent: false }), oneCommit)).toEqual([["ToolRequested"], ["ToolCompleted"]])
      expect(yield* commitsOfOneCall(toolNamed("audit", { idempotent: true, durability: "two-phase" }), oneCommit)).toEqual([["ToolRequested"], ["ToolCompleted"]])
    }))

  it("a tool that is not idempotent cannot ask for one commit", () => {
    expect(() => toolNamed("pay", { idempotent: false, durability: "one-commit" })).toThrow(/needs an idempotent tool/)
  })
})
