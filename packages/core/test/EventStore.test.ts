import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { type Event, EventStore, Json, SqlEventStore, Tenant } from "@artana/core"
import { EventStoreSuite } from "@artana/core/testing/suites"

EventStoreSuite.suite("memory", () => EventStore.layerMemory)

// What a store reads back must decode to what was written, and a corrupt payload must be refused.
describe("SqlEventStore.decodePayload", () => {
  const tenant = Tenant.TenantContext.make({ tenantId: "t", capabilities: ["c"], budgetUsdLimit: 1 })
  const valid: ReadonlyArray<Event.EventPayload> = [
    { _tag: "RunStarted", workflow: "w", input: { a: [1, null] }, tenant, parentRunId: "p", rootRunId: "r" },
    { _tag: "RunResumed", reason: "r" },
    {
      _tag: "ModelRequested",
      model: "m",
      messages: [
        { role: "system", content: "s" },
        { role: "user", content: "u" },
        { role: "assistant", content: null, toolCalls: [{ id: "1", name: "n", arguments: "{}" }] },
        { role: "assistant", content: "plain" },
        { role: "tool", toolCallId: "1", name: "n", content: "c" }
      ],
      tools: ["n"],
      requestHash: "h",
      outputSchema: { type: "object" }
    },
    { _tag: "ModelRequested", model: "m", messages: [], tools: [], requestHash: "h" },
    { _tag: "ModelCompleted", model: "m", message: { role: "assistant", content: "x" }, usage: { inputTokens: 1, outputTokens: 2, cachedInputTokens: 0 }, costUsd: 0.1 },
    { _tag: "ModelFailed", kind: "timeout", error: "e" },
    { _tag: "ToolRequested", tool: "t", arguments: "{}", idempotencyKey: "k", toolCallId: "c" },
    { _tag: "ToolRequested", tool: "t", arguments: "{}", idempotencyKey: "k" },
    { _tag: "ToolCompleted", tool: "t", result: { deep: [[{ x: [true, 1.5, "s", null] }]] }, reconciled: true },
    { _tag: "ToolFailed", tool: "t", kind: "timeout", error: "e", path: "$.a", reconciled: false },
    { _tag: "ReconciliationRequired", tool: "t", idempotencyKey: "k" },
    { _tag: "StepCompleted", name: "s", value: 3 },
    { _tag: "PauseRequested", reason: "r", ticket: "t", responseSchema: { type: "string" } },
    { _tag: "HumanResponded", ticket: "t", payload: "yes" },
    { _tag: "PolicyDenied", tool: "t", reason: "r", capability: "c", middleware: "m" },
    { _tag: "BudgetExceeded", limitUsd: 1, spentUsd: 2, phase: "before_call" },
    { _tag: "MiddlewareNote", middleware: "m", note: "n", data: {} },
    { _tag: "RunCompleted", output: null },
    { _tag: "RunFailed", errorTag: "E", error: "e" }
  ]
  const invalid: ReadonlyArray<unknown> = [
    null,
    "RunCompleted",
    [],
    {},
    { _tag: "Unknown" },
    { _tag: "RunResumed" },
    { _tag: "RunResumed", reason: 1 },
    { _tag: "ToolFailed", tool: "t", kind: "exploded", error: "e" },
    { _tag: "BudgetExceeded", limitUsd: 1, spentUsd: 2, phase: "later" },
    { _tag: "ModelRequested", model: "m", messages: [{ role: "robot", content: "x" }], tools: [], requestHash: "h" },
    { _tag: "ModelCompleted", model: "m", message: { role: "user", content: "x" }, usage: { inputTokens: 1, outputTokens: 2 }, costUsd: 0 },
    { _tag: "ModelCompleted", model: "m", message: { role: "assistant", content: 3 }, usage: { inputTokens: 1, outputTokens: 2 }, costUsd: 0 },
    { _tag: "ModelCompleted", model: "m", message: { role: "assistant", content: "x" }, usage: { inputTokens: "1", outputTokens: 2 }, costUsd: 0 },
    { _tag: "ToolCompleted", tool: "t", result: { f: () => 1 } },
    { _tag: "StepCompleted", name: "s", value: undefined },
    { _tag: "RunStarted", workflow: "w", input: 1, tenant: { tenantId: " ", capabilities: [], budgetUsdLimit: 1 } }
  ]
  it("decodes every event type back to what was written", () => {
    for (const payload of valid) {
      const decoded = SqlEventStore.decodePayload(JSON.parse(JSON.stringify(payload)))
      expect(Either.getOrThrow(decoded)).toEqual(payload)
    }
    const started = Either.getOrThrow(SqlEventStore.decodePayload(JSON.parse(JSON.stringify(valid[0]))))
    expect(started._tag === "RunStarted" && started.tenant instanceof Tenant.TenantContext).toBe(true)
  })

  it("refuses corrupt payloads with a readable reason", () => {
    for (const input of invalid) {
      const decoded = SqlEventStore.decodePayload(input)
      expect({ input, ok: Either.isRight(decoded) }).toEqual({ input, ok: false })
      if (Either.isLeft(decoded)) expect(decoded.left.length).toBeGreaterThan(0)
    }
  })

  it("the Json schema refuses what JSON cannot carry", () => {
    for (const bad of [undefined, Number.NaN, Infinity, () => 1, new Date(0), { a: undefined }, [1, undefined]]) {
      expect(Schema.is(Json.Json)(bad)).toBe(false)
    }
    expect(Schema.is(Json.Json)({ a: [1, "x", null, true, { b: 1.5 }] })).toBe(true)
  })
})
