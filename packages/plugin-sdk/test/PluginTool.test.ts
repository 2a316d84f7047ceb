// Tools with raw JSON Schema parameters, validated with a real validator before any handler runs, through a real
// kernel with model-issued calls; and the same for Effect Schema parameters.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import { Chat, EventStore, Kernel, Tenant, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { defineTool } from "@artana/plugin-sdk"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

/** A transfer tool described in raw JSON Schema: required fields, types, enums, formats, oneOf, allOf. */
const makeTransfer = () => {
  const calls: Array<unknown> = []
  const tool = defineTool<{ readonly amount: number; readonly currency: "EUR" | "USD"; readonly to: { readonly iban: string } | { readonly email: string }; readonly on?: string }>({
    name: "bank.transfer",
    description: "Transfers money",
    parameters: {
      type: "object",
      properties: {
        amount: { type: "number", exclusiveMinimum: 0 },
        currency: { enum: ["EUR", "USD"] },
        on: { type: "string", format: "date" },
        to: {
          oneOf: [
            { type: "object", properties: { iban: { type: "string", pattern: "^[A-Z]{2}[0-9]{2}[A-Z0-9]{10,30}$" } }, required: ["iban"], additionalProperties: false },
            { type: "object", properties: { email: { type: "string", format: "email" } }, required: ["email"], additionalProperties: false }
          ]
        }
      },
      required: ["amount", "currency", "to"],
      additionalProperties: false,
      allOf: [{ not: { properties: { currency: { const: "USD" }, amount: { minimum: 10000 } }, required: ["currency", "amount"] } }]
    },
    handler: (args) =>
      Effect.sync(() => {
        calls.push(args)
        return { ok: true, amount: args.amount }
      })
  })
  return { tool, calls }
}

const decode = (tool: ReturnType<typeof makeTransfer>["tool"], args: unknown) => tool.decodeArguments(JSON.stringify(args))

describe("defineTool with raw JSON Schema", () => {
  const { tool } = makeTransfer()

  it("the model sees the schema as written", () => {
    expect(tool.spec.parameters).toMatchObject({ type: "object", required: ["amount", "currency", "to"], additionalProperties: false })
    expect(JSON.stringify(tool.spec.parameters)).toContain("\"format\":\"email\"")
  })

  it.each([
    ["a missing required field", { amount: 5, currency: "EUR" }, "$.to", "is missing"],
    ["a wrong type", { amount: "5", currency: "EUR", to: { iban: "DE89370400440532013000" } }, "$.amount", "must be number"],
    ["a value outside the enum", { amount: 5, currency: "GBP", to: { iban: "DE89370400440532013000" } }, "$.currency", "must be one of [\"EUR\",\"USD\"]"],
    ["a bad format", { amount: 5, currency: "EUR", to: { iban: "DE89370400440532013000" }, on: "15/03/2026" }, "$.on", "must match format \"date\""],
    ["an unknown property", { amount: 5, currency: "EUR", to: { iban: "DE89370400440532013000" }, memo: "x" }, "$.memo", "is not allowed"],
    ["a number at the exclusive minimum", { amount: 0, currency: "EUR", to: { iban: "DE89370400440532013000" } }, "$.amount", "must be > 0"],
    ["matching none of oneOf", { amount: 5, currency: "EUR", to: { phone: "123" } }, "$.to", ""],
    ["failing an allOf rule", { amount: 20000, currency: "USD", to: { email: "a@b.example" } }, "$", "must NOT be valid"]
  ])("refuses %s, naming the path", (_what, args, path, reason) => {
    const result = decode(tool, args)
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left).toMatchObject({ _tag: "InvalidToolArguments", tool: "bank.transfer", path })
      expect(result.left.reason).toContain(reason)
    }
  })

  it("accepts arguments that match, in every branch of oneOf", () => {
    expect(Either.isRight(decode(tool, { amount: 5, currency: "EUR", to: { iban: "DE89370400440532013000" }, on: "2026-03-15" }))).toBe(true)
    expect(Either.isRight(decode(tool, { amount: 9999, currency: "USD", to: { email: "ops@acme.example" } }))).toBe(true)
  })

  it("a schema that says nothing about other properties is closed: unknown ones (at any depth, __proto__ too) are refused", () => {
    const tool = defineTool({
      name: "note.send",
      description: "x",
      parameters: {
        type: "object",
        properties: { to: { type: "object", properties: { email: { type: "string" } } }, text: { type: "string" } },
        required: ["text"]
      },
      handler: () => Effect.succeed(null)
    })
    expect(tool.spec.parameters).toMatchObject({ additionalProperties: false, properties: { to: { additionalProperties: false } } })
    expect(Either.isRight(tool.decodeArguments(`{"text":"hi","to":{"email":"a@b.c"}}`))).toBe(true)
    for (
      const [args, path] of [
        [`{"text":"hi","env":{"PATH":"/tmp"}}`, "$.env"],
        [`{"text":"hi","to":{"email":"a@b.c","admin":true}}`, "$.to.admin"],
        [`{"text":"hi","__proto__":{"admin":true}}`, "$.__proto__"]
      ] as const
    ) {
      const result = tool.decodeArguments(args)
      expect(Either.isLeft(result) && result.left).toMatchObject({ path, reason: expect.stringContaining("is not allowed") })
    }
    // Said explicitly, other properties stay allowed.
    const open = defineTool({
      name: "note.open",
      description: "x",
      parameters: { type: "object", properties: { text: { type: "string" } }, additionalProperties: true },
      handler: () => Effect.succeed(null)
    })
    expect(Either.isRight(open.decodeArguments(`{"text":"hi","extra":1}`))).toBe(true)
  })

  it.each([
    ["anyOf: none matches", { id: true }, false, "$.id", "must match a schema in anyOf"],
    ["anyOf: a string that matches the uuid format", { id: "5f0c3a5e-8d5b-4c1e-9d2a-0c6a1f2b3c4d" }, true, "", ""],
    ["anyOf: an integer in range", { id: 7 }, true, "", ""],
    ["anyOf: a string in no format (its branches fail at the same depth: the combinator speaks)", { id: "seven" }, false, "$.id", "must match a schema in anyOf"],
    ["a type list: null allowed", { id: 7, note: null }, true, "", ""],
    ["a type list: neither", { id: 7, note: 5 }, false, "$.note", "must be string,null"],
    ["const", { id: 7, kind: "other" }, false, "$.kind", "must be equal to constant"],
    ["a nested required field", { id: 7, meta: {} }, false, "$.meta.source", "is missing"],
    ["a URI format", { id: 7, meta: { source: "not a uri" } }, false, "$.meta.source", "must match format \"uri\""],
    ["a date-time format", { id: 7, at: "yesterday" }, false, "$.at", "must match format \"date-time\""],
    ["an array item", { id: 7, tags: ["ok", 3] }, false, "$.tags[1]", "must be string"],
    ["everything right", { id: 7, kind: "ticket", meta: { source: "https://example.com/t/7" }, at: "2026-03-15T10:00:00Z", tags: ["a"] }, true, "", ""]
  ])("%s", (_what, args, ok, path, reason) => {
    const tool = defineTool({
      name: "ticket.get",
      description: "x",
      parameters: {
        type: "object",
        properties: {
          id: { anyOf: [{ type: "string", format: "uuid" }, { type: "integer", minimum: 1, maximum: 1000 }] },
          note: { type: ["string", "null"] },
          kind: { const: "ticket" },
          meta: { type: "object", properties: { source: { type: "string", format: "uri" } }, required: ["source"] },
          at: { type: "string", format: "date-time" },
          tags: { type: "array", items: { type: "string" } }
        },
        required: ["id"]
      },
      handler: () => Effect.succeed(null)
    })
    const result = tool.decodeArguments(JSON.stringify(args))
    expect(Either.isRight(result)).toBe(ok)
    if (Either.isLeft(result)) expect(result.left).toMatchObject({ path, reason: expect.stringContaining(reason) })
  })

  it("plugins never share validator state: two schemas with the same $id, and one defined twice", () => {
    const define = (max: number) =>
      defineTool({
        name: "counter.set",
        description: "x",
        parameters: { $id: "https://plugins.example/counter", type: "object", properties: { n: { type: "integer", maximum: max } }, required: ["n"] },
        handler: () => Effect.succeed(null)
      })
    const small = define(10)
    const large = define(1000)
    expect(Either.isLeft(small.decodeArguments("{\"n\":50}"))).toBe(true)
    expect(Either.isRight(large.decodeArguments("{\"n\":50}"))).toBe(true)
    expect(Either.isLeft(define(10).decodeArguments("{\"n\":50}"))).toBe(true)
  })

  it("a host defining tools from many generated schemas keeps a bounded set of validators; every tool still validates", () => {
    const define = (max: number) =>
      defineTool({
        name: `limit.${max}`,
        description: "x",
        parameters: { type: "object", properties: { n: { type: "integer", maximum: max } }, required: ["n"] },
        handler: () => Effect.succeed(null)
      })
    // More schemas than the validators kept: the first ones are dropped from the shared cache, not from their tools.
    const tools = Array.from({ length: 600 }, (_, i) => define(i))
    for (const max of [0, 1, 300, 599]) {
      expect(Either.isRight(tools[max]!.decodeArguments(`{"n":${max}}`))).toBe(true)
      expect(Either.isLeft(tools[max]!.decodeArguments(`{"n":${max + 1}}`))).toBe(true)
    }
    // Defined again after being dropped: compiled again, same answers.
    expect(Either.isLeft(define(0).decodeArguments("{\"n\":1}"))).toBe(true)
  })

  it("a schema the validator cannot compile is refused when the tool is defined", () => {
    expect(() => defineTool({ name: "bad", description: "x", parameters: { type: "object", properties: { a: { type: "nonsense" } } }, handler: () => Effect.succeed(null) }))
      .toThrow(/bad.*not a JSON Schema/)
  })
})

describe("model-issued calls through a real kernel", () => {
  it.effect("invalid arguments are logged with their path and answered to the model; the handler does not run", () => {
    const { calls, tool } = makeTransfer()
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.chat({ runId: "r1", tenant, messages: [Chat.user("pay Ann 5 EUR")] })
      expect(result).toMatchObject({ status: "completed" })
      const events = yield* (yield* EventStore.EventStore).readEvents("acme", "r1")
      const failed = events.map((e) => e.payload).filter((p) => p._tag === "ToolFailed")
      expect(failed).toMatchObject([{ tool: "bank.transfer", kind: "invalid_arguments", path: "$.to.email", error: "must match format \"email\"" }])
      expect(calls).toEqual([{ amount: 5, currency: "EUR", to: { email: "ann@acme.example" } }])
      const model = yield* ScriptedModel.ScriptedModel
      expect(model.requests()[1]!.messages.at(-1)!.content).toContain("InvalidToolArguments")
    }).pipe(Effect.provide(Layer.provideMerge(Kernel.layer(), Layer.mergeAll(
      EventStore.layerMemory,
      ToolRegistry.layer([tool]),
      ScriptedModel.layer([
        ScriptedModel.toolCall("bank.transfer", { amount: 5, currency: "EUR", to: { email: "not an email" } }),
        ScriptedModel.toolCall("bank.transfer", { amount: 5, currency: "EUR", to: { email: "ann@acme.example" } }),
        ScriptedModel.text("done")
      ])
    ))))
  })

  it.effect("Effect Schema parameters take the same path", () => {
    let ran = 0
    const greet = defineTool({
      name: "greet",
      description: "Greets",
      parameters: Schema.Struct({ name: Schema.String.pipe(Schema.minLength(1)) }),
      handler: ({ name }) => Effect.sync(() => `hello ${name} (${++ran})`)
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect(yield* Effect.flip(kernel.callTool({ runId: "g1", tenant, tool: "greet", args: { name: "" } }))).toMatchObject({ _tag: "InvalidToolArguments", path: "$.name" })
      expect(yield* kernel.callTool({ runId: "g2", tenant, tool: "greet", args: { name: "Ann" } })).toMatchObject({ output: "hello Ann (1)" })
      expect(ran).toBe(1)
    }).pipe(Effect.provide(Layer.provideMerge(Kernel.layer(), Layer.mergeAll(EventStore.layerMemory, ToolRegistry.layer([greet]), ScriptedModel.layer([])))))
  })
})
