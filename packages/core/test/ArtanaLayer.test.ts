import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import { Artana, Chat, EventStore, type Middleware, Tool, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"

const Decision = Schema.Struct({ approved: Schema.Boolean })

const makeTools = () => {
  const calls: Array<string> = []
  const getBalance = Tool.make({
    name: "get_balance",
    description: "Balance of an account in USD",
    parameters: Schema.Struct({ accountId: Schema.String }),
    requiresCapability: "finance:read",
    idempotent: true,
    handler: ({ accountId }) => Effect.sync(() => (calls.push(`get_balance:${accountId}`), { accountId, balance: 1200 }))
  })
  const transfer = Tool.make({
    name: "transfer",
    description: "Moves money",
    parameters: Schema.Struct({ amount: Schema.Number }),
    requiresCapability: "finance:write",
    handler: () => Effect.sync(() => (calls.push("transfer"), "moved"))
  })
  return { calls, tools: [getBalance, transfer] }
}

/** Records what each named interceptor saw, in the order the chain ran. */
const recorder = (name: string, seen: Array<string>): Middleware.Interceptor => ({
  name,
  beforeModel: (request) => Effect.sync(() => (seen.push(`${name}:before:[${request.tools.map((t) => t.name).join(",")}]`), request)),
  afterModel: (_request, response) => Effect.sync(() => (seen.push(`${name}:after`), response))
})

const acme = { tenantId: "acme", capabilities: ["finance:read"], budgetUsdLimit: 1 }

describe("Artana.layer and the accessors", () => {
  it.effect("a chat with a prompt and a plain-object tenant: the typed answer is result.output; the governed order holds", () => {
    const { calls, tools } = makeTools()
    const seen: Array<string> = []
    const layer = Artana.layer({
      model: ScriptedModel.layer([ScriptedModel.toolCall("get_balance", { accountId: "acc-1" }), ScriptedModel.json({ approved: true })]),
      tools,
      middleware: [recorder("first", seen), recorder("second", seen)]
    })
    return Effect.gen(function*() {
      const result = yield* Artana.chat({ runId: "c-1", tenant: acme, prompt: "Can acc-1 pay 100?", outputSchema: Decision })
      expect(result.status).toBe("completed")
      if (result.status !== "completed") return
      const approved: boolean = result.output.approved
      expect(approved).toBe(true)
      expect(result.messages[0]).toEqual(Chat.user("Can acc-1 pay 100?"))
      expect(calls).toEqual(["get_balance:acc-1"])
      // The kernel removed `transfer` (no finance:write) before the chain; before hooks in order, after hooks reversed.
      expect(seen).toEqual([
        "first:before:[get_balance]", "second:before:[get_balance]", "second:after", "first:after",
        "first:before:[get_balance]", "second:before:[get_balance]", "second:after", "first:after"
      ])
      const state = yield* Artana.status({ tenantId: "acme", runId: "c-1" })
      expect(state.status).toBe("completed")
      const events = yield* Artana.readEvents({ tenantId: "acme", runId: "c-1" })
      expect(events[0]?.payload).toMatchObject({ _tag: "RunStarted", tenant: { tenantId: "acme", capabilities: ["finance:read"] } })
    }).pipe(Effect.provide(layer))
  })

  it.effect("ctx.chat in a workflow takes a prompt too: sent after the messages, replayed as logged", () => {
    const model = ScriptedModel.layer([ScriptedModel.text("Bonjour")])
    const translate = Workflow.make({
      name: "translate",
      input: Schema.Struct({ text: Schema.String }),
      output: Schema.String,
      run: ({ text }, ctx) => Effect.map(ctx.chat({ messages: [Chat.system("Translate to French.")], prompt: text }), (r) => r.output)
    })
    return Effect.gen(function*() {
      expect(yield* Artana.run(translate, { runId: "t-1", tenant: acme, input: { text: "Hello" } })).toMatchObject({ status: "completed", output: "Bonjour" })
      const inspector = yield* ScriptedModel.ScriptedModel
      expect(inspector.requests()[0]!.messages).toEqual([Chat.system("Translate to French."), Chat.user("Hello")])
      expect(yield* Artana.replay(translate, { tenantId: "acme", runId: "t-1" })).toMatchObject({ status: "completed", output: "Bonjour" })
    }).pipe(Effect.provide(Layer.merge(Artana.layer({ model }), model)))
  })

  it.effect("prompt and messages together: the prompt is the last message", () =>
    Effect.gen(function*() {
      const result = yield* Artana.chat({ tenant: acme, messages: [Chat.system("Be brief.")], prompt: "Hi" })
      if (result.status !== "completed") return expect.fail(result.status)
      expect(result.output).toBe("Hello")
      expect(result.messages.slice(0, 2)).toEqual([Chat.system("Be brief."), Chat.user("Hi")])
      const empty = yield* Effect.either(Artana.chat({ tenant: acme }))
      expect(Either.getLeft(empty).pipe((e) => e._tag === "Some" ? e.value._tag : "none")).toBe("InvalidInput")
    }).pipe(Effect.provide(Artana.layer({ model: ScriptedModel.layer([ScriptedModel.text("Hello")]) }))))

  it.effect("a plain tenant that is not one is InvalidTenant, naming the field, and nothing is written", () =>
    Effect.gen(function*() {
      const bad = [
        [{ tenantId: "acme", budgetUsdLimit: Infinity }, "budgetUsdLimit"],
        [{ tenantId: " ", budgetUsdLimit: 1 }, "tenantId"],
        // A NUL would let this tenant's keys spell another's ("acme\u0000x" + run "r1" = "acme" + run "x\u0000r1").
        [{ tenantId: "acme\u0000x", budgetUsdLimit: 1 }, "a tenant id holds no control character"],
        [{ tenantId: "acme", budgetUsdLimit: 1, capabilites: ["x"] }, "capabilites"]
      ] as const
      for (const [tenant, field] of bad) {
        const result = yield* Effect.either(Artana.chat({ tenant, prompt: "Hi" }))
        expect(Either.isLeft(result)).toBe(true)
        if (Either.isRight(result)) continue
        expect(result.left._tag).toBe("InvalidTenant")
        expect(result.left.message).toContain(field)
        expect(result.left.message).toContain("A tenant is {")
      }
      const store = yield* EventStore.EventStore
      expect(yield* store.listRuns("acme")).toEqual([])
    }).pipe(Effect.provide(Artana.layer({ model: ScriptedModel.layer([]) }))))
})

describe("Artana.create: the Promise client over the same layer", () => {
  it("chat's typed answer is result.output; a plain tenant is checked the same way", async () => {
    const { tools } = makeTools()
    const artana = Artana.create({ model: ScriptedModel.layer([ScriptedModel.json({ approved: false })]), tools })
    try {
      const result = await artana.chat({ runId: "p-1", tenant: acme, prompt: "Pay?", outputSchema: Decision })
      if (result.status !== "completed") return expect.fail(result.status)
      expect(result.output).toEqual({ approved: false })
      await expect(artana.chat({ tenant: { tenantId: "", budgetUsdLimit: 1 }, prompt: "Hi" })).rejects.toMatchObject({ _tag: "InvalidTenant" })
      expect((await artana.listRuns("acme")).map((r) => r.runId)).toEqual(["p-1"])
    } finally {
      await artana.close()
    }
  })
})
