// PII numbering read back on a resume (another process, a fresh middleware): the cases an adversarial review found.
// Never a wrong value: a resumed process restores what the first one did, or, where it cannot know, leaves the
// placeholder (the tool gets the literal, never another person's value).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { Chat, EventStore, type Json, Kernel, type Middleware, type ModelPort, Tenant } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import * as Pii from "../src/Pii.js"
import { kernelLayer, notifyTool } from "./kernelFixtures.js"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const EMAIL = "ann.lee@example.com"
const OTHER = "bo.chen@example.org"

const makeContext = (runId: string): Middleware.CallContext => ({
  runId,
  rootRunId: runId,
  tenant,
  stepKey: "model:0",
  spentUsd: 0,
  note: () => Effect.void
})
const request = (messages: ReadonlyArray<Chat.ChatMessage>): ModelPort.ModelRequest => ({ model: "m", messages, tools: [] })

const makeTools = (received: Array<string>, crash: { on: boolean }, description?: string) => [notifyTool(received, crash, description)]


const reply = (content: string | null, id: string, args: Json.Json): ScriptedModel.Reply =>
  ({ content, toolCalls: [{ id, name: "notify", arguments: args }] })

/**
 * Control: one process runs scriptA + scriptB. Crash: process A runs scriptA and dies in `notify`; process B (a fresh
 * middleware, the same store) resumes, re-runs `notify`, and makes the later model calls live with scriptB.
 * Returns what the LAST notify received in each.
 */
const controlAndCrash = (
  runId: string,
  messages: ReadonlyArray<Chat.ChatMessage>,
  scriptA: ReadonlyArray<ScriptedModel.Reply>,
  scriptB: ReadonlyArray<ScriptedModel.Reply>,
  middleware: () => ReadonlyArray<Middleware.Interceptor>,
  notifyDescription?: string
) =>
  Effect.gen(function*() {
    const control: Array<string> = []
    const controlStore = Layer.succeed(EventStore.EventStore, yield* EventStore.makeMemory)
    const done = yield* Effect.flatMap(Kernel.Kernel, (k) => k.chat({ runId, tenant, messages })).pipe(
      Effect.provide(kernelLayer([...scriptA, ...scriptB, ScriptedModel.text("done")], makeTools(control, { on: false }, notifyDescription), middleware(), controlStore))
    )
    expect(done.status).toBe("completed")
    const received: Array<string> = []
    const crash = { on: true }
    const tools = makeTools(received, crash, notifyDescription)
    const store = Layer.succeed(EventStore.EventStore, yield* EventStore.makeMemory)
    const crashed = yield* Effect.exit(Effect.flatMap(Kernel.Kernel, (k) => k.chat({ runId, tenant, messages })).pipe(
      Effect.provide(kernelLayer(scriptA, tools, middleware(), store))
    ))
    expect(Exit.isFailure(crashed)).toBe(true)
    crash.on = false
    const resumed = yield* Effect.flatMap(Kernel.Kernel, (k) => k.chat({ runId, tenant, messages })).pipe(
      Effect.provide(kernelLayer([...scriptB, ScriptedModel.text("done")], tools, middleware(), store))
    )
    expect(resumed.status).toBe("completed")
    return { control: control[control.length - 1], resumed: received[received.length - 1] }
  })

describe("PII read back on a resume, in a kernel", () => {
  it.effect("a value only a tool's description held stays a placeholder after a resume", () =>
    Effect.gen(function*() {
      const out = yield* controlAndCrash(
        "r1",
        [Chat.user(`I am ${EMAIL}. Notify the on-call.`)],
        [reply("I will notify <EMAIL_2> after telling the team.", "a1", { to: "team" })],
        [reply(null, "b1", { to: "<EMAIL_2>" })],
        () => [Pii.middleware({ restoreToolArguments: true })],
        `Notifies a person. The on-call is ${OTHER}.`
      )
      expect(out.control).toBe(`notify:${OTHER}`)
      // Not in the log (a ModelRequested names its tools, not their text): left as the placeholder.
      expect(out.resumed).toBe("notify:<EMAIL_2>")
    }))

  it.effect("scrubReplies: a value only the model wrote stays a placeholder after a resume", () =>
    Effect.gen(function*() {
      const out = yield* controlAndCrash(
        "r2",
        [Chat.user(`I am ${EMAIL}. Notify my manager.`)],
        [reply(`Your manager is ${OTHER}; telling the team first.`, "a1", { to: "team" })],
        [reply(null, "b1", { to: "<EMAIL_2>" })],
        () => [Pii.middleware({ restoreToolArguments: true, scrubReplies: true })]
      )
      expect(out.control).toBe(`notify:${OTHER}`)
      // The model wrote it: the log holds only the placeholder.
      expect(out.resumed).toBe("notify:<EMAIL_2>")
    }))

  it.effect("a middleware after pii that adds a message: nothing is read back, the placeholder stays", () =>
    Effect.gen(function*() {
      const policy: Middleware.Interceptor = {
        name: "policy",
        beforeModel: (req) => Effect.succeed({ ...req, messages: [Chat.system("Be polite."), ...req.messages] })
      }
      const out = yield* controlAndCrash(
        "r3",
        [Chat.user(`I am ${EMAIL}. Notify me.`)],
        [reply("Noted <EMAIL_1>; telling the team first.", "a1", { to: "team" })],
        [reply(null, "b1", { to: "<EMAIL_1>" })],
        () => [Pii.middleware({ restoreToolArguments: true }), policy]
      )
      expect(out.control).toBe(`notify:${EMAIL}`)
      // The logged request is not the one the middleware made: nothing is read back from it.
      expect(out.resumed).toBe("notify:<EMAIL_1>")
    }))

  it.effect("a middleware after pii that drops one message and adds another: never another person's value after a resume", () =>
    Effect.gen(function*() {
      const windowed: Middleware.Interceptor = {
        name: "window",
        beforeModel: (req) =>
          Effect.succeed({ ...req, messages: [...req.messages.slice(0, 1), ...req.messages.slice(2), Chat.user("Reminder: be brief.")] })
      }
      const out = yield* controlAndCrash(
        "r4",
        [Chat.system("Support."), Chat.user(`Customer: ${EMAIL}`), Chat.user(`Customer: ${OTHER}`)],
        [reply("Noted <EMAIL_2>; telling the team first.", "a1", { to: "team" })],
        [reply(null, "b1", { to: "<EMAIL_2>" })],
        // Pii first in the chain, as the README says.
        () => [Pii.middleware({ restoreToolArguments: true }), windowed]
      )
      // The model saw only "Customer: <EMAIL_2>" (OTHER); the window dropped EMAIL's message. Read back message by
      // message, ann's message lined up with bo's logged one and ann got <EMAIL_2>: the tool got ann's address.
      expect(out.control).toBe(`notify:${OTHER}`)
      expect(out.resumed).toBe("notify:<EMAIL_2>")
    }))
})

describe("PII read back, the interceptor alone", () => {
  it.effect("a raw text holding the read-back's marker characters is not read back", () =>
    Effect.gen(function*() {
      const raw = [Chat.user(`ref \uE0000\uE001 from ${EMAIL}`)]
      const first = Pii.middleware({ restoreToolArguments: true })
      const sent = (yield* first.beforeModel!(request(raw), makeContext("r5"))).messages
      expect(sent[0]?.content).toBe("ref \uE0000\uE001 from <EMAIL_1>")
      const args = JSON.stringify({ to: "<EMAIL_1>" })
      const info = { tool: "notify", requiresCapability: undefined, arguments: args }
      const inA = JSON.parse((yield* first.beforeTool!(info, makeContext("r5"))).arguments)
      const resumed = Pii.middleware({ restoreToolArguments: true })
      resumed.replayedModel!({ request: request(raw), sent, reply: undefined }, makeContext("r5"))
      const inB = JSON.parse((yield* resumed.beforeTool!(info, makeContext("r5"))).arguments)
      expect(inA).toEqual({ to: EMAIL })
      // The marker characters in the text: it is not read back (safe: the placeholder stays).
      expect(inB).toEqual({ to: "<EMAIL_1>" })
    }))
})



describe("numbering past 2^53", () => {
  it.effect("a pasted placeholder with a huge number does not make two new values share one", () =>
    Effect.gen(function*() {
      const pii = Pii.middleware({ restoreToolArguments: true })
      const raw: ReadonlyArray<Chat.ChatMessage> = [
        // e.g. text from a web page or a tool result, or a pasted template
        Chat.user("ticket ref <EMAIL_9007199254740992>"),
        Chat.user(`Customer ${EMAIL}, escalate to ${OTHER}`)
      ]
      const sent = (yield* pii.beforeModel!(request(raw), makeContext("r8"))).messages
      console.log("R8", sent.map((m) => m.content))
      const info = { tool: "notify", requiresCapability: undefined, arguments: JSON.stringify({ to: (sent[1]!.content as string).split(" ")[1]!.replace(",", "") }) }
      const restored = JSON.parse((yield* pii.beforeTool!(info, makeContext("r8"))).arguments)
      console.log("a pasted placeholder with a huge number does not make two new values share one", JSON.parse(info.arguments).to, "restored to", restored.to)
      expect(sent[1]!.content).not.toMatch(/<EMAIL_(\d+)>.*<EMAIL_\1>/)
      expect(restored.to).toBe(EMAIL)
    }))
})
