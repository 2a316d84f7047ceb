// The deadline of a streamed call is between chunks: a server that stops sending mid-answer fails the call with a
// retryable timeout (and its request is aborted), while a slow answer whose chunks keep coming is not cut.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, type Duration, Effect, Either, Stream } from "effect"
import type { ModelPort } from "@artana/core"
import { OpenAiModel } from "../src/index.js"
import { FakeOpenAi } from "../src/testing.js"

const request: ModelPort.ModelRequest = { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], tools: [] }

const streamOf = (url: string, timeout: Duration.DurationInput = "1 second") =>
  Effect.flatMap(OpenAiModel.make({ baseURL: url, stream: true, timeout, maxRetries: 0 }), (m) => Stream.runCollect(m.stream(request)))

describe("a streamed call's deadline", () => {
  it.scopedLive("a server that stops sending mid-answer fails the call with a timeout", () =>
    Effect.gen(function*() {
      const never = new Promise<void>(() => {})
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text("one two three four", { pieces: 4 })], {
        beforeChunk: ({ chunk }) => (chunk === 3 ? never : Promise.resolve())
      })
      const result = yield* Effect.either(streamOf(server.url))
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "ModelError", kind: "timeout", retryable: true })
    }), 60_000)

  it.scopedLive("chunks that keep coming, each within the deadline, are not cut however long the answer takes", () =>
    Effect.gen(function*() {
      // 4 s of answer against a 3 s deadline; each gap (0.4 s) leaves the client 2.6 s to get its chunk, however
      // loaded the machine (a 1 s deadline and 0.15 s gaps left it 0.85 s).
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text("a b c d e f g h i j", { pieces: 10 })], {
        beforeChunk: () => new Promise((r) => setTimeout(r, 400))
      })
      const parts = Chunk.toReadonlyArray(yield* streamOf(server.url, "3 seconds"))
      expect(parts.flatMap((p) => (p._tag === "TextDelta" ? [p.text] : [])).join("")).toBe("a b c d e f g h i j")
      expect(parts[parts.length - 1]?._tag).toBe("Finished")
    }), 60_000)

  it.scopedLive("a server that does not start answering within the deadline is asked again, and the retry's answer streams", () =>
    Effect.gen(function*() {
      const never = new Promise<void>(() => {})
      // The first request never gets its headers (they go with the first chunk); the second is answered.
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text("never sent"), FakeOpenAi.text("the retry's reply", { pieces: 3 })], {
        beforeChunk: ({ request }) => (request === 1 ? never : Promise.resolve())
      })
      // The retry must start answering within the deadline too: 3 s, so a loaded machine's slow answer is not a second timeout.
      const model = yield* OpenAiModel.make({ baseURL: server.url, stream: true, timeout: "3 seconds", maxRetries: 1, retryBaseDelay: "10 millis" })
      const parts = Chunk.toReadonlyArray(yield* Stream.runCollect(model.stream(request)))
      expect(parts.flatMap((p) => (p._tag === "TextDelta" ? [p.text] : [])).join("")).toBe("the retry's reply")
      const finished = parts[parts.length - 1]
      expect(finished?._tag === "Finished" && finished.response.notes?.map((n) => n.note)).toEqual(["retry"])
    }), 60_000)
})
