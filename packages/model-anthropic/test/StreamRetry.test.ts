// A streamed call on the shared push path (`ModelTransport.streamed`): a server that does not start answering within
// the deadline is asked again, with a request of its own (an attempt that timed out does not leave the retry aborted).
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { AnthropicModel } from "@artana/model-anthropic"
import { FakeAnthropic } from "@artana/model-anthropic/testing"
import { request } from "./fixtures.js"

describe("AnthropicModel's streamed call over the real SDK", () => {
  it.scopedLive("a server that does not start answering within the deadline is asked again, and the retry's answer streams", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([FakeAnthropic.hang, FakeAnthropic.text("the retry's reply", { pieces: 3 })])
      // The retry must start answering within the deadline too: 3 s, so a loaded machine's slow answer is not a second timeout.
      const model = yield* AnthropicModel.make({ baseURL: server.url, stream: true, timeout: "3 seconds", maxRetries: 1, retryBaseDelay: "10 millis" })
      const parts = Chunk.toReadonlyArray(yield* Stream.runCollect(model.stream(request())))
      expect(parts.flatMap((p) => (p._tag === "TextDelta" ? [p.text] : [])).join("")).toBe("the retry's reply")
      const finished = parts[parts.length - 1]
      expect(finished?._tag === "Finished" && finished.response.notes?.map((n) => n.note)).toEqual(["retry"])
      expect(server.requests.length).toBe(2)
    }), 60_000)

  it.scopedLive("the deltas go to a push sink as they arrive, and the reply is the effect's value", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([FakeAnthropic.text("one two three", { pieces: 3 })])
      const model = yield* AnthropicModel.make({ baseURL: server.url, stream: true })
      const seen: Array<string> = []
      const response = yield* model.streamTo(request(), (deltas) => {
        for (const d of deltas) if (d._tag === "TextDelta") seen.push(d.text)
        return true
      })
      expect(seen.join("")).toBe("one two three")
      expect(response.message.content).toBe("one two three")
    }), 60_000)
})
