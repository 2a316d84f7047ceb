// PII on a streamed reply through the real `openai` SDK: the test server streams an email split across chunks, in the
// text and in a tool call's arguments. With `scrubReplies`, no delta a live reader gets (in this process, or in another
// kernel reconnecting over the SQLite file), no delta kept in the file, and no logged event holds the address.
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Chunk, Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"
import { Chat, EventStore, Kernel, Live, LiveStore, Middleware, Tenant, Tool, ToolRegistry } from "@artana/core"
import { OpenAiModel } from "@artana/model-openai"
import { FakeOpenAi } from "@artana/model-openai/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as Pii from "../src/Pii.js"

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

const email = "ann.lee@example.com"
const content = `Sending invoice 42 to ${email} right away. It covers the March work on the billing export, the two support calls ` +
  "and the migration of the old reports; payment is due in thirty days."
const args = { subject: "Invoice 42", to: email, note: "paid" }
const TEXT_PIECES = 16
/** Pieces of the address: once scrubbed, nothing a reader or the store gets may hold one of them. */
const fragments = ["ann.lee", "lee@", "@exa", "example.c", "@"]

/** How many boundaries between `pieces` fall inside `value` (which they spell once). */
const cutsInside = (pieces: ReadonlyArray<string>, value: string): number => {
  const start = pieces.join("").indexOf(value)
  let at = 0
  let cuts = 0
  for (const piece of pieces.slice(0, -1)) {
    at += piece.length
    if (start < at && at < start + value.length) cuts++
  }
  return cuts
}

/** What a delta, a live event or a logged payload shows a reader, as one string. */
const shown = (value: unknown) => JSON.stringify(value)

const kernelLayer = (db: string, server: FakeOpenAi.Server, tools: ReadonlyArray<Tool.Tool>) =>
  Layer.provideMerge(
    Kernel.layer({ livePollInterval: "20 millis" }),
    Layer.mergeAll(
      SqliteStore.layer({ filename: db }),
      OpenAiModel.layer({ baseURL: server.url, retryBaseDelay: "1 millis", stream: true }),
      ToolRegistry.layer(tools),
      Middleware.layer([Pii.middleware({ scrubReplies: true })])
    )
  )

describe("Pii over the openai SDK, streamed", () => {
  it.scopedLive("an address split across SSE chunks, in text and tool-call arguments, reaches no reader, no kept delta, no event", () =>
    Effect.gen(function*() {
      const reply = FakeOpenAi.toolCalls([{ name: "send_invoice", arguments: args, id: "call_1" }], { content, pieces: TEXT_PIECES })
      // The server really splits the address: the SDK reading it directly gets no delta that holds it whole, in the text
      // or in the arguments.
      const direct = yield* FakeOpenAi.scoped([reply])
      const sdk = yield* OpenAiModel.make({ baseURL: direct.url, stream: true })
      const raw = Chunk.toReadonlyArray(yield* Stream.runCollect(sdk.stream({ model: "gpt-4o-mini", messages: [Chat.user("Send it.")], tools: [] })))
      const rawText = raw.flatMap((d) => (d._tag === "TextDelta" ? [d.text] : []))
      const rawArguments = raw.flatMap((d) => (d._tag === "ToolCallDelta" ? [d.arguments] : []))
      expect(rawText.join("")).toBe(content)
      expect(rawArguments.join("")).toBe(JSON.stringify(args))
      expect(cutsInside(rawText, email)).toBeGreaterThanOrEqual(1)
      expect(cutsInside(rawArguments, email)).toBeGreaterThanOrEqual(1)

      const dir = mkdtempSync(join(tmpdir(), "artana-pii-stream-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const db = join(dir, "runs.db")
      const server = yield* FakeOpenAi.scoped([
        reply,
        FakeOpenAi.text("Sent.")
      ], { beforeChunk: () => new Promise((r) => setImmediate(r)) })

      // The tool holds the run at its step while the test looks at the store: the deltas are kept until the run ends.
      const entered = yield* Deferred.make<string>()
      const release = yield* Deferred.make<void>()
      const sendInvoice = Tool.make({
        name: "send_invoice",
        description: "Mails an invoice",
        parameters: Schema.Struct({ subject: Schema.String, to: Schema.String, note: Schema.String }),
        handler: ({ to }) => Effect.zipRight(Deferred.succeed(entered, to), Effect.as(Deferred.await(release), `sent to ${to}`))
      })
      const placeholder = "<EMAIL_1>"
      const scrubbedArgs = JSON.stringify({ ...args, to: placeholder })
      const scrubbedText = content.replace(email, placeholder)

      const events = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const run = yield* Effect.fork(kernel.chat({ runId: "mail", tenant, messages: [Chat.user("Send invoice 42 to the customer.")], tools: ["send_invoice"] }))
        // The tool got the arguments as logged: placeholders (restoring them is `restoreToolArguments`, not asked here).
        expect(yield* Deferred.await(entered)).toBe(placeholder)
        // It must have read the first turn's deltas before the run ends (the end drops them): the test releases the
        // tool only once this reader got to the tool's start.
        const readerAtTool = yield* Deferred.make<void>()
        const reader = yield* Effect.fork(
          kernel.live({ tenantId: "acme", runId: "mail" }).pipe(
            Stream.tap((e) => (e._tag === "ToolStarted" ? Deferred.succeed(readerAtTool, undefined) : Effect.void)),
            Stream.takeUntil((e) => e._tag === "Completed"),
            Stream.runCollect
          )
        )

        // The deltas kept in the file while the run is live.
        const kept = yield* Effect.flatMap(LiveStore.LiveStore, (s) => s.read("acme", "mail", Live.start, Number.MAX_SAFE_INTEGER, 10_000))
        const keptDeltas = kept.flatMap((d) => (d.part._tag === "TextDelta" || d.part._tag === "ToolCallDelta" ? [d.part] : []))
        expect(keptDeltas.length).toBeGreaterThan(1)
        for (const d of kept) for (const f of fragments) expect(shown(d)).not.toContain(f)

        // Another kernel over the file (another process's view) reads the run from the start and reconnects at every
        // offset: each reader gets exactly the rest, and nothing of the address.
        const seen = yield* Effect.gen(function*() {
          const other = yield* Kernel.Kernel
          const upTo = (after?: string) =>
            other.live({ tenantId: "acme", runId: "mail" }, after === undefined ? {} : { after }).pipe(
              Stream.takeUntil((e) => e._tag === "ToolStarted"),
              Stream.runCollect,
              Effect.map(Chunk.toReadonlyArray)
            )
          const all = yield* upTo()
          for (let k = 0; k < all.length - 1; k++) expect(yield* upTo(all[k]!.offset)).toEqual(all.slice(k + 1))
          return all
        }).pipe(Effect.provide(kernelLayer(db, server, [sendInvoice])))
        for (const e of seen) for (const f of fragments) expect(shown(e)).not.toContain(f)
        expect(seen.filter((e) => e._tag === "ToolCallDelta")).toEqual([expect.objectContaining({ index: 0, id: "call_1", name: "send_invoice", arguments: scrubbedArgs })])

        yield* Deferred.await(readerAtTool)
        yield* Deferred.succeed(release, undefined)
        const result = yield* Fiber.join(run)
        expect(result.status === "completed" && result.output.output).toBe("Sent.")
        return Chunk.toReadonlyArray(yield* Fiber.join(reader))
      }).pipe(Effect.provide(kernelLayer(db, server, [sendInvoice])))

      // The reader in this process: the deltas spell the logged (scrubbed) reply, and none holds a piece of the address.
      for (const e of events) for (const f of fragments) expect(shown(e)).not.toContain(f)
      const first = events.find((e) => e._tag === "ModelStreamStarted")!.stepKey
      const textDeltas = events.flatMap((e) => (e._tag === "TextDelta" && e.stepKey === first ? [e.text] : []))
      // The placeholder is passed on mid-stream, with text after it still to come (not only at the reply's end).
      const withPlaceholder = textDeltas.findIndex((t) => t.includes(placeholder))
      expect(withPlaceholder).toBeGreaterThanOrEqual(0)
      expect(textDeltas.slice(withPlaceholder + 1).join("").length).toBeGreaterThan(0)
      const replies = Live.replies()
      for (const e of events) replies.push(e)
      expect(replies.text(first)).toBe(scrubbedText)
      expect(events.filter((e) => e._tag === "ToolCallDelta").map((e) => e._tag === "ToolCallDelta" && e.arguments).join("")).toBe(scrubbedArgs)

      // The log: the reply and the tool's request carry placeholders, and the file holds the address nowhere.
      const log = yield* Effect.flatMap(EventStore.EventStore, (s) => s.readEvents("acme", "mail")).pipe(
        Effect.provide(SqliteStore.layer({ filename: db }))
      )
      const completed = log.find((e) => e.payload._tag === "ModelCompleted")?.payload
      expect(completed?._tag === "ModelCompleted" && completed.message.content).toBe(scrubbedText)
      expect(completed?._tag === "ModelCompleted" && completed.message.toolCalls?.map((c) => c.arguments)).toEqual([scrubbedArgs])
      const requested = log.find((e) => e.payload._tag === "ToolRequested")?.payload
      expect(requested?._tag === "ToolRequested" && requested.arguments).toBe(scrubbedArgs)
      for (const e of log) for (const f of fragments) expect(shown(e.payload)).not.toContain(f)
      for (const file of readdirSync(dir)) expect(readFileSync(join(dir, file)).includes("ann.lee")).toBe(false)
    }), { timeout: 60_000 })
})
