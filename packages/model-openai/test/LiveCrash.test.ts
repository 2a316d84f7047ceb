// A process dies mid-stream (SIGKILL): the run resumes elsewhere, and a reader following it (another process's
// kernel over the same SQLite file) still sees one coherent reply, with no offset twice.
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Kernel, Live, ToolRegistry } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { TestWorkflows } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { Chunk, Deferred, Effect, Either, Fiber, Layer, Stream } from "effect"

const { chatThenPause } = TestWorkflows

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./child/stream-child.ts", import.meta.url))

const answer = "Streaming keeps a person watching while the model writes its answer."

const signal = () => {
  let resolve: () => void = () => {}
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

const positionOf = (offset: string) => Either.getOrThrow(Live.parseOffset(offset))

describe("a crash mid-stream", () => {
  it.scopedLive("the run resumes in another process and the reader sees one coherent reply, every offset once", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "artana-live-crash-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const db = join(dir, "runs.db")
      const midway = signal()
      const killed = signal()
      // Request 1 (the child's) stops after three text chunks, until the child is dead; request 2 (the resume's) streams.
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text(answer, { pieces: 8 }), FakeOpenAi.text(answer, { pieces: 8 })], {
        beforeChunk: async ({ chunk, request }) => {
          if (request === 1 && chunk === 4) {
            midway.resolve()
            await killed.promise
          }
          await new Promise((r) => setImmediate(r))
        }
      })
      const child = spawn(process.execPath, ["--import", "tsx", CHILD, db, server.url, "crashy"], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] })
      let stderr = ""
      child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s))
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("close", (_code, sig) => resolve(sig)))
      yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
      yield* Effect.promise(() => Promise.race([midway.promise, exited.then(() => Promise.reject(new Error(`the child ended early: ${stderr}`)))]))

      // This process: its own kernel over the same file, reading the run while the child streams it.
      const layer = Layer.provideMerge(
        Kernel.layer({ workflows: [chatThenPause], livePollInterval: "20 millis" }),
        Layer.mergeAll(SqliteStore.layer({ filename: db }), OpenAiModel.layer({ baseURL: server.url, stream: true }), ToolRegistry.layer([]))
      )
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const threeSeen = yield* Deferred.make<void>()
        let seen = 0
        const reader = yield* Effect.fork(
          kernel.live({ tenantId: "acme", runId: "crashy" }).pipe(
            Stream.tap((e) => (e._tag === "TextDelta" && ++seen === 3 ? Deferred.succeed(threeSeen, undefined) : Effect.void)),
            Stream.takeUntil((e) => e._tag === "Paused"),
            Stream.runCollect
          )
        )
        // The reader has the child's first three deltas: now the child dies, mid-stream.
        yield* Deferred.await(threeSeen)
        child.kill("SIGKILL")
        expect(yield* Effect.promise(() => exited)).toBe("SIGKILL")
        killed.resolve()

        const resumed = yield* kernel.resume({ tenantId: "acme", runId: "crashy", workflow: chatThenPause })
        expect(resumed.status).toBe("paused")
        const events = Chunk.toReadonlyArray(yield* Fiber.join(reader))

        // Every offset once, in order.
        for (let i = 1; i < events.length; i++) expect(Live.compare(positionOf(events[i - 1]!.offset), positionOf(events[i]!.offset))).toBeLessThan(0)
        // Two attempts of the one model step: the child's, cut short, then the resumed one, whole.
        const starts = events.flatMap((e, i) => (e._tag === "ModelStreamStarted" ? [{ i, attempt: e.attempt, stepKey: e.stepKey }] : []))
        expect(starts).toHaveLength(2)
        expect(starts[1]!.attempt).toBeGreaterThan(starts[0]!.attempt)
        expect(starts[1]!.stepKey).toBe(starts[0]!.stepKey)
        const textOf = (from: number, to: number) => events.slice(from, to).flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")
        const cut = textOf(starts[0]!.i, starts[1]!.i)
        expect(cut.length).toBeGreaterThan(0)
        expect(answer.startsWith(cut) && cut.length < answer.length).toBe(true)
        expect(textOf(starts[1]!.i, events.length)).toBe(answer)
        // One reply: what a UI folds from the stream is the logged reply, once.
        const replies = Live.replies()
        for (const e of events) replies.push(e)
        expect(replies.text(starts[0]!.stepKey)).toBe(answer)
        expect(replies.completed(starts[0]!.stepKey)).toBe(true)
        const completed = events.filter((e) => e._tag === "ModelCompleted")
        expect(completed).toHaveLength(1)
        expect(completed[0]?._tag === "ModelCompleted" && completed[0].message.content).toBe(answer)

        // A reader that reconnects mid-way through the child's deltas gets exactly the rest.
        const k = starts[0]!.i + 2
        const rest = yield* kernel.live({ tenantId: "acme", runId: "crashy" }, { after: events[k]!.offset }).pipe(
          Stream.takeUntil((e) => e._tag === "Paused"),
          Stream.runCollect
        )
        expect(Chunk.toReadonlyArray(rest)).toEqual(events.slice(k + 1))
      }).pipe(Effect.provide(layer))
    }), { timeout: 600_000 })
})
