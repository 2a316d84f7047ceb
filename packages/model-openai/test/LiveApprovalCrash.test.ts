// An approval asked for in the middle of a streamed turn: the stream shows it as a pending approval, and carries on
// with the decision and what follows, also after the process that held the run died while waiting (SIGKILL). A
// reader that stayed connected and one that reconnects at its last offset both see the whole run: no gap, nothing
// twice (cloudflare/agents #918 and #1837 are this bug in a peer).
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Artana, EventStore, Kernel, Live, ToolRegistry } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { Chunk, Deferred, Effect, Either, Fiber, Layer, Stream } from "effect"
import { OpenAiModel } from "../src/index.js"
import { FakeOpenAi } from "../src/testing.js"
import { handlerRuns, payout, transferFunds } from "./child/payout.js"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./child/approval-child.ts", import.meta.url))

const intro = "I will move $250 from acc-1 to acc-2 once you approve."
const done = "Done: $250 went from acc-1 to acc-2."
const args = { from: "acc-1", to: "acc-2", amountUsd: 250 }

const positionOf = (offset: string) => Either.getOrThrow(Live.parseOffset(offset))
const textOf = (events: ReadonlyArray<Live.LiveEvent>) => events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")

/** A promise, and its resolve. */
const signal = () => {
  let resolve: () => void = () => {}
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

/** Calls `seen` once the stream's text after its first pending approval spells `text`. */
const watchAfterPending = (text: string, seen: () => void, pendingSeen = false) => {
  let pending = pendingSeen
  let acc = ""
  return (e: Live.LiveEvent) =>
    Effect.sync(() => {
      if (e._tag === "ApprovalPending") pending = true
      if (pending && e._tag === "TextDelta" && (acc += e.text) === text) seen()
    })
}

describe("an approval in the middle of a streamed turn", () => {
  it.scopedLive("shows in the stream, and the stream carries on with the decision after the holder was SIGKILLed", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "artana-live-approval-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const db = join(dir, "runs.db")
      const log = join(dir, "handler.log")
      // Request 1 (the child's turn): text, then the transfer call, streamed. Request 2 (after the approval): the
      // answer, whose end (chunk 6, after its five text chunks) waits until both readers have had all its text: the
      // run's end then drops its deltas, and a reader that had not read them yet would see the logged reply alone.
      const readA = signal()
      const readB = signal()
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.toolCalls([{ name: "transfer_funds", arguments: args }], { content: intro, pieces: 6 }),
        FakeOpenAi.text(done, { pieces: 5 })
      ], {
        beforeChunk: async ({ chunk, request }) => {
          if (request === 2 && chunk === 6) await Promise.all([readA.promise, readB.promise])
          await new Promise((r) => setImmediate(r))
        }
      })
      const child = spawn(process.execPath, ["--import", "tsx", CHILD, db, server.url, log, "pay"], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s))
      child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s))
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("close", (_code, sig) => resolve(sig)))
      yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))

      // This process: its own kernel over the same file, reading the run while the child streams it.
      const workflow = payout(log)
      const layer = Layer.provideMerge(
        Kernel.layer({ workflows: [workflow], livePollInterval: "20 millis" }),
        Layer.mergeAll(SqliteStore.layer({ filename: db }), OpenAiModel.layer({ baseURL: server.url, stream: true }), ToolRegistry.layer([transferFunds(log)]))
      )
      return yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const run = { tenantId: "acme", runId: "pay" }
        // Reader A stays connected throughout.
        const whole = yield* Effect.fork(
          kernel.live(run, { waitForStart: true }).pipe(
            Stream.tap(watchAfterPending(done, readA.resolve)),
            Stream.takeUntil((e) => e._tag === "Completed"),
            Stream.runCollect
          )
        )
        // Reader B reads up to the pending approval, and disconnects there.
        const pendingSeen = yield* Deferred.make<void>()
        const before = Chunk.toReadonlyArray(
          yield* kernel.live(run, { waitForStart: true }).pipe(
            Stream.takeUntil((e) => e._tag === "ApprovalPending"),
            Stream.tap((e) => (e._tag === "ApprovalPending" ? Deferred.succeed(pendingSeen, undefined) : Effect.void)),
            Stream.runCollect,
            Effect.timeoutFail({ duration: "300 seconds", onTimeout: () => new Error(`no pending approval in the stream; child: ${stdout} ${stderr}`) })
          )
        )
        const pending = before[before.length - 1]!
        expect(pending).toMatchObject({ _tag: "ApprovalPending", tool: "transfer_funds" })
        if (pending._tag !== "ApprovalPending") return
        expect(JSON.parse(pending.arguments)).toEqual(args)
        // The turn streamed before it asked: its text, in more than one delta, then the call's arguments.
        expect(before.filter((e) => e._tag === "TextDelta").length).toBeGreaterThan(1)
        expect(textOf(before)).toBe(intro)
        expect(before.some((e) => e._tag === "ToolCallDelta")).toBe(true)
        expect(before.filter((e) => e._tag === "ModelCompleted")).toHaveLength(1)

        // The child, still holding the paused run in its kernel, dies while waiting.
        yield* Effect.promise(() => new Promise<void>((resolve) => (stdout.includes("\n") ? resolve() : child.stdout.once("data", () => resolve()))))
        expect(JSON.parse(stdout.trim())).toMatchObject({ status: "paused", approval: { approvalId: pending.approvalId } })
        child.kill("SIGKILL")
        expect(yield* Effect.promise(() => exited)).toBe("SIGKILL")

        // Reader B reconnects at the last offset it saw, while the run waits.
        const reconnected = yield* Effect.fork(
          kernel.live(run, { after: pending.offset }).pipe(
            Stream.tap(watchAfterPending(done, readB.resolve, true)),
            Stream.takeUntil((e) => e._tag === "Completed"),
            Stream.runCollect
          )
        )

        // Approved from this process: the run goes on (the handler runs once), its next turn streams.
        const final = yield* Artana.approve({ tenantId: "acme", approvalId: pending.approvalId, approver: "alice", workflow })
        expect(final).toMatchObject({ status: "completed", output: done })
        expect(handlerRuns(log)).toEqual([args])

        // Reader B got the decision, the tool, the next turn's deltas, the end.
        const after = Chunk.toReadonlyArray(yield* Fiber.join(reconnected))
        const tags = after.map((e) => e._tag).filter((t) => t !== "Logged" && t !== "TextDelta")
        expect(tags).toEqual(["ApprovalDecided", "Resumed", "ToolStarted", "ToolCompleted", "ModelStreamStarted", "ModelCompleted", "Completed"])
        expect(after.find((e) => e._tag === "ApprovalDecided")).toMatchObject({ approvalId: pending.approvalId, decision: "approved", by: "alice" })
        expect(textOf(after)).toBe(done)

        // No gap, nothing twice: the two pieces are the connected reader's stream, every log event once, in order.
        const stream = [...before, ...after]
        expect(Chunk.toReadonlyArray(yield* Fiber.join(whole))).toEqual(stream)
        for (let i = 1; i < stream.length; i++) expect(Live.compare(positionOf(stream[i - 1]!.offset), positionOf(stream[i]!.offset))).toBeLessThan(0)
        const logged = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", "pay"))
        expect(stream.flatMap((e) => (e.offset.includes(".") ? [] : [Number(e.offset)]))).toEqual(logged.map((e) => e.seq))
      }).pipe(Effect.provide(layer))
    }), { timeout: 600_000 })
})
