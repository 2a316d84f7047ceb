import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { createHash } from "node:crypto"
import { type Event, Json } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { canonicalJson } from "../src/internal/hash.js"

describe("Json.canonical and Json.hash", () => {
  it("sorts keys at every depth and writes no whitespace", () => {
    expect(Json.canonical({ b: 1, a: [true, null, { d: "x", c: 2.5 }] })).toBe('{"a":[true,null,{"c":2.5,"d":"x"}],"b":1}')
  })

  it("is JSON.stringify of the value with its keys sorted, for any JSON (lone surrogates, controls, -0 included)", () => {
    const sorted = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sorted)
        : v !== null && typeof v === "object"
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(Reflect.get(v, k))]))
        : v
    fc.assert(fc.property(fc.jsonValue({ stringUnit: "binary" }), fc.constantFrom(-0, 0.1, 1e-7, 1e21, -1), (value, n) => {
      const withNumber = { value, n, nested: [n, { n }] }
      expect(canonicalJson(withNumber)).toBe(JSON.stringify(sorted(withNumber)))
    }), { numRuns: 300 })
  }, 120_000) // 300 generated values: seconds when quiet, more on a busy machine

  it("writes strings and numbers as JSON.stringify does", () => {
    const value = { s: "é\u2028\"\n", n: 1e21, m: -0.000001, i: 10 }
    expect(JSON.parse(Json.canonical(value))).toEqual(value)
    expect(Json.canonical(value)).toBe(`{"i":10,"m":${JSON.stringify(-0.000001)},"n":${JSON.stringify(1e21)},"s":${JSON.stringify(value.s)}}`)
  })

  it("hashes the canonical text, so key order does not change the hash and content does", () => {
    expect(Json.hash({ a: 1, b: [1, 2] })).toBe(Json.hash({ b: [1, 2], a: 1 }))
    expect(Json.hash({ a: 1, b: [1, 2] })).not.toBe(Json.hash({ a: 1, b: [2, 1] }))
    expect(Json.hash("x")).toBe(createHash("sha256").update('"x"').digest("hex"))
  })

  it("an event's hash is SHA-256 of \"artana:v2:\", its prevHash and the event without the hash, sorted fields, the payload as its stored text", () => {
    const events = TestLog.chain("run-é\"1\\\u0001\u2028😀\ud800", "acme", [], [
      { _tag: "RunStarted", workflow: "w", input: { z: [1, { y: null, x: "\u2028" }], a: -0.5 }, tenant: { tenantId: "acme", capabilities: ["b", "a"], budgetUsdLimit: 1e21 } },
      { _tag: "ToolRequested", tool: "echo", arguments: "{\"i\":1}", idempotencyKey: "k" },
      { _tag: "ToolCompleted", tool: "echo", result: { ok: true, list: [] } }
    ])
    for (const event of events) {
      const { hash, payload, ...rest }: Event.Event = event
      // The envelope is canonical JSON with the payload spliced in as the text that is stored (JSON.stringify's).
      const marker = "\u0000payload\u0000"
      const material = Json.canonical(JSON.parse(JSON.stringify({ ...rest, payload: marker }))).replace(JSON.stringify(marker), JSON.stringify(payload))
      expect(hash).toBe(createHash("sha256").update("artana:v2:" + rest.prevHash + material).digest("hex"))
    }
  })
})
