// PII and streamed replies: with `scrubReplies`, no delta a live reader gets holds a value, not even one split across
// two deltas, and the deltas spell the logged (scrubbed) reply.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Stream } from "effect"
import { EventStore, Kernel, Middleware, Tenant, ToolRegistry } from "@artana/core"
import { ScriptedModel, TestWorkflows } from "@artana/core/testing"
import * as Pii from "../src/Pii.js"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

const layer = (reply: ScriptedModel.Reply, pii: Pii.Options) =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([reply]), ToolRegistry.layer([]), Middleware.layer([Pii.middleware(pii)]))
  )


const { chatThenPause } = TestWorkflows

/** Runs the workflow; the text deltas a reader gets, and the logged reply. */
const run = Effect.gen(function*() {
  const kernel = yield* Kernel.Kernel
  expect((yield* kernel.execute(chatThenPause, { runId: "r", tenant, input: "Who do I write to?" })).status).toBe("paused")
  const events = yield* kernel.live({ tenantId: "acme", runId: "r" }).pipe(Stream.takeUntil((e) => e._tag === "Paused"), Stream.runCollect)
  const deltas = Chunk.toReadonlyArray(events).flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))
  const logged = (yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", "r"))).find((e) => e.payload._tag === "ModelCompleted")!.payload
  return { deltas, reply: logged._tag === "ModelCompleted" ? logged.message.content ?? "" : "" }
})

const pieces = ["Write to ann@exa", "mple.com or call +44 20 79", "46 0958 today; key sk-proj-", "abcdefghijklmnopqrstuvwxyz0123456789ABCD done."]
const secrets = ["ann@", "exa", "mple.com", "20 79", "0958", "sk-proj", "abcdefgh"]

describe("Pii with streamed replies", () => {
  it.effect("scrubReplies: a value split across deltas never reaches a reader; the deltas spell the logged reply", () =>
    Effect.gen(function*() {
      const { deltas, reply } = yield* run
      expect(reply).toBe("Write to <EMAIL_1> or call <PHONE_1> today; key <OPENAI_KEY_1> done.")
      expect(deltas.length).toBeGreaterThan(0)
      for (const text of deltas) for (const secret of secrets) expect(text).not.toContain(secret)
      expect(deltas.join("")).toBe(reply)
    }).pipe(Effect.provide(layer(ScriptedModel.text(pieces.join(""), { deltas: pieces }), { scrubReplies: true }))))

  it.effect("without scrubReplies, replies (whole or streamed) are the model's own words, as before", () =>
    Effect.gen(function*() {
      const { deltas, reply } = yield* run
      expect(reply).toBe(pieces.join(""))
      expect(deltas).toEqual(pieces)
    }).pipe(Effect.provide(layer(ScriptedModel.text(pieces.join(""), { deltas: pieces }), {}))))

  it("a scrubber numbers on after placeholders already in a text (a scrubbed reply sent back), never reusing one", () => {
    const scrubber = Pii.makeScrubber()
    expect(scrubber.scrub("earlier you wrote <EMAIL_1> and <EMAIL_2>; now bo@example.org").text).toBe("earlier you wrote <EMAIL_1> and <EMAIL_2>; now <EMAIL_3>")
  })
})
