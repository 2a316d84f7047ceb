// The streamed body as the adapter reads it (not through the SDK's `Stream`): a server whose SSE is cut anywhere,
// written by hand over HTTP, and what the real `openai` SDK's request and the adapter make of it.
import * as Http from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { ModelPort } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"
import { Chunk, Effect, Either, Stream } from "effect"
import { request } from "./fixtures.js"

/** A server answering every request with `pieces`, each written on its own (a millisecond apart: separate reads). */
const serving = (pieces: ReadonlyArray<string | Uint8Array>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Http.Server>((resolve) => {
        const server = Http.createServer((req, res) => {
          req.resume()
          req.on("end", () => {
            res.writeHead(200, { "content-type": "text/event-stream" })
            void (async () => {
              for (const piece of pieces) {
                res.write(piece)
                await new Promise((r) => setTimeout(r, 1))
              }
              res.end()
            })()
          })
        })
        server.listen(0, "127.0.0.1", () => resolve(server))
      })
    ),
    (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  ).pipe(Effect.map((server) => {
    const address = server.address()
    return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/v1`
  }))

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, delta, finish_reason: finish }] })

const usage = JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 } })

/** `text` as bytes, in pieces of `size` bytes (cutting characters, line ends and events anywhere). */
const cut = (text: string, size: number): Array<Uint8Array> => {
  const bytes = new TextEncoder().encode(text)
  const out: Array<Uint8Array> = []
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.slice(i, i + size))
  return out
}

const streamed = (baseURL: string) =>
  Effect.gen(function*() {
    const model = yield* OpenAiModel.make({ baseURL, stream: true, maxRetries: 0 })
    return yield* Effect.either(Stream.runCollect(model.stream(request())).pipe(Effect.map(Chunk.toReadonlyArray)))
  })

describe("OpenAiModel: the streamed body", () => {
  it.scopedLive("cut anywhere (a character split across reads, CRLF and CR line ends, comments, data on two lines), then skipped after [DONE]: the same deltas and reply", () =>
    Effect.gen(function*() {
      // An event's data over two `data:` lines (joined by a newline, between two of its JSON tokens).
      const two = chunk({ content: "\u{1F642} and" })
      const at = two.indexOf(`"object"`)
      const body = [
        `: a comment\r\n`,
        `data: ${chunk({ role: "assistant", content: "" })}\r\n\r\n`,
        `data: ${chunk({ content: "Caf\u00e9 " })}\n\n`,
        `event: message\ndata: ${two.slice(0, at)}\ndata: ${two.slice(at)}\n\n`,
        `data: ${chunk({ content: " more" })}\r\r`,
        `data: ${chunk({}, "stop")}\n\n`,
        `data: ${usage}\n\n`,
        `data: [DONE]\n\n`,
        `data: not JSON, after the end\n\n`
      ].join("")
      for (const size of [1, 7, 64, body.length]) {
        const baseURL = yield* serving(cut(body, size))
        const parts = yield* streamed(baseURL)
        expect(Either.isRight(parts)).toBe(true)
        if (Either.isLeft(parts)) return
        const deltas = parts.right.flatMap((p) => (p._tag === "Finished" ? [] : [p]))
        expect(deltas.map((d) => (d._tag === "TextDelta" ? d.text : ""))).toEqual(["Caf\u00e9 ", "\u{1F642} and", " more"])
        expect(ModelPort.foldDeltas(deltas).text).toBe("Caf\u00e9 \u{1F642} and more")
        const last = parts.right[parts.right.length - 1]
        expect(last?._tag === "Finished" && last.response.message.content).toBe("Caf\u00e9 \u{1F642} and more")
        expect(last?._tag === "Finished" && last.response.usage).toEqual({ inputTokens: 9, outputTokens: 4 })
      }
    }))

  it.scopedLive("an error event mid-stream fails the call (a retryable server_error naming the server's message) after the deltas before it", () =>
    Effect.gen(function*() {
      const baseURL = yield* serving([
        `data: ${chunk({ role: "assistant", content: "Hel" })}\n\n`,
        `data: ${JSON.stringify({ error: { message: "the engine is overloaded", type: "server_error", code: null } })}\n\n`,
        `data: ${chunk({ content: "lo" })}\n\n`
      ])
      const model = yield* OpenAiModel.make({ baseURL, stream: true, maxRetries: 0 })
      const seen: Array<string> = []
      const result = yield* Effect.either(Stream.runForEach(model.stream(request()), (p) => Effect.sync(() => void (p._tag === "TextDelta" && seen.push(p.text)))))
      expect(seen).toEqual(["Hel"])
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "ModelError", kind: "server_error", retryable: true })
      expect(Either.isLeft(result) && result.left.reason).toContain("the engine is overloaded")
    }))

  it.scopedLive("an event that is not a chat completion chunk fails the call, naming what came", () =>
    Effect.gen(function*() {
      const baseURL = yield* serving([`data: ${chunk({ role: "assistant", content: "Hi" })}\n\n`, `data: {"surprise":true}\n\n`, `data: [DONE]\n\n`])
      const parts = yield* streamed(baseURL)
      expect(Either.isLeft(parts) && parts.left).toMatchObject({ _tag: "ModelError", kind: "unknown" })
      expect(Either.isLeft(parts) && parts.left.reason).toContain(`not a chat completion chunk: {"surprise":true}`)
    }))
})
