import { describe, expect, it } from "@effect/vitest"
import { EventLines, EventStore, Kernel, Verify, Workflow } from "@artana/core"
import { Effect, Either, Redacted, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

// Values whose JSON text a re-encoding could change: key order, unicode, escapes, large and small numbers.
const Value = Schema.Struct({ z: Schema.Number, a: Schema.String, nested: Schema.Record({ key: Schema.String, value: Schema.Number }) })
const values = Workflow.make({
  name: "values",
  input: Schema.Null,
  output: Schema.Number,
  run: (_input, ctx) =>
    Effect.gen(function*() {
      let n = 0
      for (let i = 0; i < 25; i++) {
        const v = yield* ctx.step("value", Effect.succeed({ z: i * 1e21 + 0.1, a: `é "quoted" \n ${"\u2028"} ${i}`, nested: { b: i, a: -i, "10": 1, "2": 2 } }), Value)
        n += v.nested.b ?? 0
      }
      return n
    })
})

const linesOf = (auditKey?: string) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    yield* kernel.execute(values, { runId: "lines", tenant, input: null })
    const events = yield* kernel.readEvents({ tenantId: tenant.tenantId, runId: "lines" })
    const info = yield* (yield* EventStore.EventStore).getRun(tenant.tenantId, "lines")
    return { events, info, lines: events.map(EventLines.encode) }
  }).pipe(Effect.provide(kernelLayer([], [], { kernel: { auditKey: auditKey === undefined ? undefined : Redacted.make(auditKey) } })))

describe("EventLines", () => {
  it.effect("a run's events as JSON lines decode to the same events, which verify elsewhere against the run's head", () =>
    Effect.gen(function*() {
      const { events, info, lines } = yield* linesOf()
      expect(lines.every((line) => !line.includes("\n"))).toBe(true)
      const decoded = lines.map((line) => Either.getOrThrow(EventLines.decode(line)))
      expect(decoded).toEqual(events)
      expect(Verify.verifyEvents("lines", decoded, { heads: [{ source: "exported", seq: info.headSeq, hash: info.headHash }] })).toMatchObject({ ok: true, events: events.length })
      // One character of a payload changed: the chain breaks at that event.
      const altered = lines.map((line, i) => (i === 5 ? line.replace("quoted", "qu0ted") : line)).map((line) => Either.getOrThrow(EventLines.decode(line)))
      expect(Verify.verifyEvents("lines", altered)).toMatchObject({ ok: false, firstBrokenSeq: 6 })
      expect(Either.isLeft(EventLines.decode("{}"))).toBe(true)
      expect(Either.isLeft(EventLines.decode("not json"))).toBe(true)
    }))

  it.effect("a log written with an audit key verifies elsewhere with that key, and with no other", () =>
    Effect.gen(function*() {
      const { lines } = yield* linesOf("the-audit-key")
      const decoded = lines.map((line) => Either.getOrThrow(EventLines.decode(line)))
      expect(Verify.verifyEvents("lines", decoded, { auditKey: "the-audit-key" })).toMatchObject({ ok: true })
      expect(Verify.verifyEvents("lines", decoded)).toMatchObject({ ok: false, firstBrokenSeq: 1 })
    }))
})
