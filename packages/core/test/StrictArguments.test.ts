import { describe, expect, it } from "@effect/vitest"
import { Chat, EventStore, Kernel, Tool } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Effect, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

const makeSend = () => {
  const received: Array<unknown> = []
  const send = Tool.make({
    name: "send",
    description: "Sends a message",
    parameters: Schema.Struct({ to: Schema.String, text: Schema.String }),
    handler: (args) => Effect.sync(() => {
      received.push(args)
      return "sent"
    })
  })
  return { send, received }
}

const failures = (runId: string) =>
  Effect.flatMap(EventStore.EventStore, (store) => store.readEvents(tenant.tenantId, runId)).pipe(
    Effect.map((events) => events.flatMap((e) => (e.payload._tag === "ToolFailed" ? [e.payload] : [])))
  )

describe("strict tool arguments", () => {
  for (
    const [name, args, path] of [
      ["an unknown property", `{"to":"bob","text":"hi","admin":true}`, "$.admin"],
      ["a __proto__ property", `{"to":"bob","text":"hi","__proto__":{"admin":true}}`, "$.__proto__"]
    ] as const
  ) {
    it.effect(`${name} is refused as invalid arguments, logged, and the handler does not run`, () => {
      const { received, send } = makeSend()
      return Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const scripted = yield* ScriptedModel.ScriptedModel
        const result = yield* kernel.chat({ runId: "strict", tenant, messages: [Chat.user("x")], tools: ["send"] })
        expect(result.status).toBe("completed")
        expect(received).toEqual([])
        const [failed] = yield* failures("strict")
        expect(failed).toMatchObject({ kind: "invalid_arguments", path })
        const toolMessage = scripted.requests()[1]!.messages.find((m) => m.role === "tool")!
        expect(toolMessage.content).toContain(path)
      }).pipe(Effect.provide(kernelLayer([
        { content: null, toolCalls: [{ name: "send", arguments: args }] },
        ScriptedModel.text("ok")
      ], [send])))
    })
  }

  it("decodeArguments refuses unknown properties at any depth and accepts exactly the declared ones", () => {
    const tool = Tool.make({
      name: "nested",
      description: "x",
      parameters: Schema.Struct({ to: Schema.Struct({ email: Schema.String }) }),
      handler: () => Effect.succeed(null)
    })
    expect(tool.decodeArguments(`{"to":{"email":"a@b.c"}}`)._tag).toBe("Right")
    const nested = tool.decodeArguments(`{"to":{"email":"a@b.c","cc":"x"}}`)
    expect(nested._tag === "Left" && nested.left.path).toBe("$.to.cc")
  })
})
