// The live stream's other kinds, in the order the log has them: a denied tool call, a signal delivered into a run, a run
// that continues as new (and the next run's stream), a failed run. A reader that reconnects after any offset it saw
// gets exactly the rest.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Fiber, Schema, Stream, TestClock } from "effect"
import { Chat, Errors, Kernel, type Live, type Middleware, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { kernelLayer, makeTools, tenant } from "./fixtures.js"

const ref = (runId: string) => ({ tenantId: tenant.tenantId, runId })

/** The run's whole live stream: it ended, so the stream ends. */
const liveOf = (kernel: Kernel.Service, runId: string, after?: string) =>
  kernel.live(ref(runId), after === undefined ? {} : { after }).pipe(Stream.runCollect, Effect.map(Chunk.toReadonlyArray))

/** Every reconnect after an offset of `all` gets exactly what followed it. */
const reconnects = (kernel: Kernel.Service, runId: string, all: ReadonlyArray<Live.LiveEvent>) =>
  Effect.gen(function*() {
    expect(new Set(all.map((e) => e.offset)).size).toBe(all.length)
    for (let k = 0; k < all.length; k++) expect(yield* liveOf(kernel, runId, all[k]!.offset)).toEqual(all.slice(k + 1))
  })

const tags = (events: ReadonlyArray<Live.LiveEvent>) => events.map((e) => e._tag)

class Refused extends Schema.TaggedError<Refused>()("Refused", { reason: Schema.String }) {}

describe("Kernel.live: denials, signals, continue-as-new, failures", () => {
  it.effect("a tool call the tenant's capabilities refuse is one ToolDenied with the reason, before the model's next turn", () => {
    const { transfer } = makeTools()
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.chat({ runId: "denied", tenant, messages: [Chat.user("Move 5 to acc-2")], tools: [transfer] })
      expect(result).toMatchObject({ status: "completed", output: { output: "I may not move money." } })
      const all = yield* liveOf(kernel, "denied")
      const denied = all.filter((e) => e._tag === "ToolDenied")
      expect(denied).toHaveLength(1)
      expect(denied[0]).toMatchObject({ _tag: "ToolDenied", tool: "transfer" })
      expect(denied[0]!._tag === "ToolDenied" && denied[0]!.reason).toContain("finance:write")
      // The call as requested, its denial (once), the policy's decision logged, then the turn that answers it.
      expect(tags(all)).toEqual(["Logged", "Logged", "ModelCompleted", "ToolStarted", "Logged", "ToolDenied", "Logged", "ModelCompleted", "Completed"])
      expect(all[4]).toMatchObject({ _tag: "Logged", type: "PolicyDenied", stepKey: denied[0]!.stepKey })
      expect(all[3]).toMatchObject({ _tag: "ToolStarted", tool: "transfer", stepKey: denied[0]!.stepKey })
      expect(all[all.length - 1]?._tag).toBe("Completed")
      yield* reconnects(kernel, "denied", all)
    }).pipe(Effect.provide(kernelLayer([
      ScriptedModel.toolCall("transfer", { from: "acc-1", to: "acc-2", amount: 5 }),
      ScriptedModel.text("I may not move money.")
    ], [transfer])))
  })

  it.effect("a tool call a policy (a middleware) refuses is one ToolDenied with the policy's reason", () => {
    const { notify } = makeTools()
    const quiet: Middleware.Interceptor = {
      name: "quiet-hours",
      beforeTool: (call) => call.tool === "notify" ? Effect.fail(new Errors.PolicyDenied({ tool: call.tool, reason: "notifications are off at night" })) : Effect.succeed(call)
    }
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      yield* kernel.chat({ runId: "quiet", tenant, messages: [Chat.user("Tell the team")], tools: [notify] })
      const all = yield* liveOf(kernel, "quiet")
      expect(all.filter((e) => e._tag === "ToolDenied")).toEqual([
        { _tag: "ToolDenied", offset: expect.any(String), stepKey: "tool:1", tool: "notify", reason: "notifications are off at night" }
      ])
      expect(all.find((e) => e._tag === "Logged" && e.type === "PolicyDenied")?.stepKey).toBe("tool:1")
      yield* reconnects(kernel, "quiet", all)
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.toolCall("notify", { text: "hi" }), ScriptedModel.text("Not now.")], [notify], { middleware: [quiet] })))
  })

  const Note = Schema.Struct({ text: Schema.String, from: Schema.String })
  const listener = Workflow.make({
    name: "listener",
    input: Schema.Null,
    output: Schema.String,
    run: (_input, ctx) =>
      Effect.gen(function*() {
        yield* ctx.step("prepare", Effect.succeed("ready"), Schema.String)
        const note = yield* ctx.waitForSignal("note", Note)
        return `${note.text} (from ${note.from})`
      })
  })

  it.effect("a signal into a paused run is SignalReceived with its payload; a reader waiting at the pause gets it first", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect((yield* kernel.execute(listener, { runId: "paused", tenant, input: null })).status).toBe("paused")
      const before = yield* kernel.live(ref("paused")).pipe(Stream.takeUntil((e) => e._tag === "Paused"), Stream.runCollect, Effect.map(Chunk.toReadonlyArray))
      const waiting = yield* Effect.fork(liveOf(kernel, "paused", before[before.length - 1]!.offset))
      const receipt = yield* kernel.signal({ ...ref("paused"), name: "note", payload: { text: "ship it", from: "ann" } })
      expect(yield* kernel.resume({ ...ref("paused"), workflow: listener })).toMatchObject({ status: "completed", output: "ship it (from ann)" })
      const after = yield* Fiber.join(waiting)
      expect(after[0]).toEqual({ _tag: "SignalReceived", offset: String(receipt.seq), stepKey: "run", name: "note", payload: { text: "ship it", from: "ann" } })
      expect(after[after.length - 1]?._tag).toBe("Completed")
      const all = yield* liveOf(kernel, "paused")
      expect(all).toEqual([...before, ...after])
      yield* reconnects(kernel, "paused", all)
    }).pipe(Effect.provide(kernelLayer([], []))))

  it.effect("a signal into a running run (its wait held in the process) is SignalReceived, in the log's order", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const run = yield* Effect.fork(kernel.execute(listener, { runId: "running", tenant, input: null }))
      yield* TestClock.adjust("1 second")
      yield* kernel.signal({ ...ref("running"), name: "note", payload: { text: "go", from: "bo" } })
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(run)).toMatchObject({ status: "completed", output: "go (from bo)" })
      const all = yield* liveOf(kernel, "running")
      const received = all.filter((e) => e._tag === "SignalReceived")
      expect(received).toEqual([expect.objectContaining({ name: "note", payload: { text: "go", from: "bo" } })])
      expect(tags(all)).not.toContain("Paused")
      expect(all[all.length - 1]?._tag).toBe("Completed")
      yield* reconnects(kernel, "running", all)
    }).pipe(Effect.provide(kernelLayer([], [], { kernel: { signalWaitHold: Duration.infinity } }))))

  it.effect("a run that continues as new ends its stream with Continued naming the next run, whose stream reads on", () => {
    const pages = Workflow.make({
      name: "pages",
      input: Schema.Number,
      output: Schema.String,
      run: (page, ctx) =>
        Effect.gen(function*() {
          const reply = yield* ctx.chat({ messages: [Chat.user(`page ${page}`)] })
          return page === 0 ? yield* ctx.continueAsNew(1) : reply.output
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect(yield* kernel.execute(pages, { runId: "book", tenant, input: 0 })).toMatchObject({ status: "completed", runId: "book::continued::1", output: "the end" })
      const first = yield* liveOf(kernel, "book")
      expect(tags(first)).toEqual(["Logged", "Logged", "ModelCompleted", "Continued"])
      const continued = first[first.length - 1]!
      expect(continued).toMatchObject({ _tag: "Continued", nextRunId: "book::continued::1" })
      yield* reconnects(kernel, "book", first)
      const next = yield* liveOf(kernel, continued._tag === "Continued" ? continued.nextRunId : "")
      expect(tags(next)).toEqual(["Logged", "Logged", "ModelCompleted", "Completed"])
      expect(next[2]).toMatchObject({ _tag: "ModelCompleted", message: { content: "the end" } })
      expect(next[3]).toMatchObject({ _tag: "Completed", output: "the end" })
      yield* reconnects(kernel, "book::continued::1", next)
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.text("turn the page", { deltas: 2 }), ScriptedModel.text("the end", { deltas: 2 })], [])))
  })

  it.effect("a failed run ends its stream with Failed and the error's tag", () => {
    const strict = Workflow.make({
      name: "strict",
      input: Schema.Null,
      output: Schema.String,
      run: (_input, ctx) =>
        Effect.gen(function*() {
          const reply = yield* ctx.chat({ messages: [Chat.user("answer")] })
          return yield* new Refused({ reason: `not good enough: ${reply.output}` })
        })
    })
    return Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const failed = yield* Effect.flip(kernel.execute(strict, { runId: "strict", tenant, input: null }))
      expect(failed._tag).toBe("Refused")
      const all = yield* liveOf(kernel, "strict")
      expect(tags(all)).toEqual(["Logged", "Logged", "ModelCompleted", "Failed"])
      expect(all[3]).toMatchObject({ _tag: "Failed", errorTag: "Refused" })
      expect(all[3]!._tag === "Failed" && all[3]!.error).toContain("not good enough: meh")
      yield* reconnects(kernel, "strict", all)
    }).pipe(Effect.provide(kernelLayer([ScriptedModel.text("meh", { deltas: 2 })], [])))
  })
})
