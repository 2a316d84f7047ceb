// A reader in one process follows a run streaming in another over the same SQLite file, woken by the store's
// `RunNotices` (the other process's commits are heard): its backstop poll is an hour, so nothing else can bring it the
// other process's deltas and events in the test's time.
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

const answer = "Notices wake a reader in another process as soon as the writer commits."

const positionOf = (offset: string) => Either.getOrThrow(Live.parseOffset(offset))

describe("a live reader in another process", () => {
  it.scopedLive("whose backstop poll is an hour gets the writer's deltas as they come, then its events, through RunNotices", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "artana-live-notices-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const db = join(dir, "runs.db")
      // The server holds the rest of the answer until this process's reader has the first three text deltas.
      let release: () => void = () => {}
      const released = new Promise<void>((r) => (release = r))
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.text(answer, { pieces: 8 })], {
        beforeChunk: async ({ chunk }) => {
          if (chunk === 4) await released
        }
      })
      const layer = Layer.provideMerge(
        Kernel.layer({ workflows: [chatThenPause], livePollInterval: "1 hour" }),
        Layer.mergeAll(SqliteStore.layer({ filename: db }), ToolRegistry.layer([]), OpenAiModel.layer({ baseURL: server.url, stream: true }))
      )
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const threeSeen = yield* Deferred.make<void>()
        let seen = 0
        // The reader starts before the run does (in the other process): every write it gets, it gets by a notice.
        const reader = yield* Effect.fork(
          kernel.live({ tenantId: "acme", runId: "watched" }, { waitForStart: true }).pipe(
            Stream.tap((e) => (e._tag === "TextDelta" && ++seen === 3 ? Deferred.succeed(threeSeen, undefined) : Effect.void)),
            Stream.takeUntil((e) => e._tag === "Paused"),
            Stream.runCollect
          )
        )
        const child = spawn(process.execPath, ["--import", "tsx", CHILD, db, server.url, "watched"], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] })
        let stderr = ""
        child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s))
        const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)))
        yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
        // Deltas reach the reader while the other process's call is still streaming (the rest is held back).
        yield* Deferred.await(threeSeen).pipe(
          Effect.timeoutFail({ duration: "300 seconds", onTimeout: () => new Error(`the reader did not get the other process's deltas: ${stderr}`) })
        )
        expect(server.requests).toHaveLength(1)
        release()
        const events = Chunk.toReadonlyArray(yield* Fiber.join(reader).pipe(
          Effect.timeoutFail({ duration: "120 seconds", onTimeout: () => new Error(`the reader did not get the run's pause: ${stderr}`) })
        ))
        expect(yield* Effect.promise(() => exited)).toBe(0)
        for (let i = 1; i < events.length; i++) expect(Live.compare(positionOf(events[i - 1]!.offset), positionOf(events[i]!.offset))).toBeLessThan(0)
        const text = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")
        expect(text).toBe(answer)
        const completed = events.filter((e) => e._tag === "ModelCompleted")
        expect(completed).toHaveLength(1)
        expect(completed[0]?._tag === "ModelCompleted" && completed[0].message.content).toBe(answer)
        expect(events[events.length - 1]?._tag).toBe("Paused")
      }).pipe(Effect.provide(layer))
    }), { timeout: 600_000 })
})
