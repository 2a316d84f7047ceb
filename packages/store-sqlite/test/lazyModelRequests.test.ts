// A replay's `ModelRequested` events on SQLite, read with their stored text only and decoded on demand (core's
// `internal/lazyPayload.ts`): the replay's outcome, what a consumer of such an event sees, and what a stored payload
// that fails its guard (under a valid chain) does to a read and to a replay.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { type Chat, type Event, EventStore, Kernel, Pricing, Tenant, Tool, ToolRegistry, Verify, Workflow } from "@artana/core"
import { ScriptedModel, TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { Cause, Effect, Either, Exit, FiberRef, Layer, Option, Schema } from "effect"
import { globalValue } from "effect/GlobalValue"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ReadWorker from "../../core/src/internal/readWorker.js"
import { verifiedPages } from "../../core/src/internal/verifiedRead.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-lazy-requests-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const TURNS = 6

/**
 * The flag a replay sets around its reads (core's `lazyPayload.replayRead`, an internal module): the same `FiberRef`,
 * found by the key core registers it under. Reads under it are a replay's reads.
 */
const replayRead = globalValue("@artana/core/lazyPayload/replayRead", () => FiberRef.unsafeMake(false))

const lookup = Tool.make({
  name: "lookup",
  description: "Looks an invoice page up",
  parameters: Schema.Struct({ i: Schema.Number, note: Schema.String }),
  idempotent: true,
  handler: (args) => Effect.succeed({ ok: true, page: args.i })
})

const system: Chat.ChatMessage = { role: "system", content: "You are a support agent. \"Quotes\", \\ and ünïcödé." }

/** An agent: a model step over a window of the conversation, the tool call it asks for, and a memoized step. */
const agent = (task: string) =>
  Workflow.make({
    name: "lazy.agent",
    input: Schema.Struct({ turns: Schema.Number }),
    output: Schema.Array(Schema.String),
    run: ({ turns }, ctx) =>
      Effect.gen(function*() {
        let recent: Array<Chat.ChatMessage> = []
        const said: Array<string> = []
        for (let i = 0; i < turns; i++) {
          const step = yield* ctx.modelStep({ model: "m", messages: [system, { role: "user", content: task }, ...recent], tools: ["lookup"] })
          const call = step.toolCalls[0]
          if (call === undefined) return yield* Effect.dieMessage("the scripted model called no tool")
          const outcome = yield* ctx.toolCall(call)
          said.push(yield* ctx.step("said", Effect.succeed(`${step.message.content ?? ""}/${outcome.message.content}`), Schema.String))
          recent = [...recent, step.message, outcome.message].slice(-4)
        }
        return said
      })
  })

const scriptOf = (turns: number) =>
  Array.from({ length: turns }, (_, i) =>
    ScriptedModel.toolCall("lookup", { i, note: `page ${i}` }, { content: `Checking page ${i}.`, usage: { inputTokens: 10, outputTokens: 2 }, costUsd: 0 }))

const layerOf = (filename: string, turns = TURNS) =>
  Layer.provideMerge(
    Kernel.layer({ prices: { m: Pricing.free } }),
    Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer(scriptOf(turns)), ToolRegistry.layer([lookup]))
  )

const ref = (runId: string) => ({ tenantId: tenant.tenantId, runId })

/** A fresh database holding the agent's run `runId` of `turns` turns (five events each), and its result. */
const written = (runId: string, turns = TURNS) => {
  const filename = path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")
  const layer = layerOf(filename, turns)
  return Effect.map(
    Effect.provide(Effect.flatMap(Kernel.Kernel, (kernel) => kernel.execute(agent("Find the overdue invoices."), { runId, tenant, input: { turns } })), layer),
    (result) => ({ layer, result })
  )
}

const isLazy = (event: object) => Object.getOwnPropertyDescriptor(event, "payload")?.get !== undefined

describe("a replay's ModelRequested payloads, decoded on demand", () => {
  it.scoped("a replay of a mixed log returns what the run returned; a changed request still diverges", () =>
    Effect.gen(function*() {
      const { layer, result } = yield* written("agent")
      expect(result).toMatchObject({ status: "completed" })
      const replayed = yield* Effect.provide(Effect.flatMap(Kernel.Kernel, (kernel) => kernel.replay(agent("Find the overdue invoices."), ref("agent"))), layer)
      expect(replayed).toEqual(result)
      const diverged = yield* Effect.provide(Effect.flatMap(Kernel.Kernel, (kernel) => Effect.either(kernel.replay(agent("Another task."), ref("agent")))), layer)
      expect(Either.isLeft(diverged) && diverged.left._tag).toBe("NonDeterminism")
      expect(Either.isLeft(diverged) && diverged.left.message).toMatch(/a model call \(request [0-9a-f]{12}\)/)
    }))

  it.scoped("an event read as a replay reads it is what an eager read gives: equality, JSON, spread, clone, chain", () =>
    Effect.gen(function*() {
      const { layer } = yield* written("agent")
      const { eager, lazy } = yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* EventStore.EventStore
          const lazy = yield* Effect.locally(store.readEvents(tenant.tenantId, "agent"), replayRead, true)
          const eager = yield* store.readEvents(tenant.tenantId, "agent")
          return { eager, lazy }
        }),
        layer
      )
      const requested = lazy.filter((e) => e.type === "ModelRequested")
      expect(requested).toHaveLength(TURNS)
      expect(requested.every(isLazy)).toBe(true)
      expect(eager.some(isLazy)).toBe(false)
      // The chain first: verifying reads the stored text, not the payload.
      expect(Verify.verifyEvents("agent", lazy)).toMatchObject({ ok: true, events: eager.length })
      expect(requested.map((e) => Object.keys(e))).toEqual(requested.map(() => Object.keys(eager[0]!)))
      expect(JSON.stringify(lazy)).toBe(JSON.stringify(eager))
      expect(lazy.map((e) => ({ ...e }))).toEqual(eager.map((e) => ({ ...e })))
      expect(structuredClone(lazy)).toEqual(structuredClone(eager))
      expect(lazy).toEqual(eager)
      for (const e of requested) {
        const payload = e.payload
        expect(payload._tag === "ModelRequested" && payload.messages.length).toBeGreaterThanOrEqual(2)
        expect(e.payload).toBe(payload)
      }
    }))

  it.scopedLive("a long log whose pages the store's read-ahead worker reads: the same events, ModelRequested read lazily, the same replay", () =>
    Effect.gen(function*() {
      // 120 turns: 602 events, more than a replay's first page.
      const { layer, result } = yield* written("long", 120)
      const outcome = yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* EventStore.EventStore
          const kernel = yield* Kernel.Kernel
          const ahead = ReadWorker.aheadOf(store)
          expect(yield* Effect.promise(() => ahead!.ready())).toBe(true)
          const before = ReadWorker.pagesSoFar()
          const next = Effect.locally(verifiedPages(store, undefined, yield* store.getRun(tenant.tenantId, "long"), { pageSize: 100 }), replayRead, true)
          const lazy: Array<Event.Event> = []
          for (let page = yield* next; Option.isSome(page); page = yield* next) lazy.push(...page.value)
          const readAhead = ReadWorker.pagesSoFar() - before
          const eager = yield* store.readEvents(tenant.tenantId, "long")
          const replayed = yield* kernel.replay(agent("Find the overdue invoices."), ref("long"))
          return { lazy, eager, readAhead, replayed }
        }),
        layer
      )
      expect(outcome.readAhead).toBe(Math.ceil(outcome.eager.length / 100))
      const requested = outcome.lazy.filter((e) => e.type === "ModelRequested")
      expect(requested).toHaveLength(120)
      expect(requested.every(isLazy)).toBe(true)
      expect(outcome.lazy).toEqual(outcome.eager)
      expect(outcome.replayed).toEqual(result)
    }))

  it.scoped("a stored ModelRequested that fails its guard under a valid chain fails the read and the replay with a StoreError", () =>
    Effect.gen(function*() {
      const { layer } = yield* written("agent")
      const outcome = yield* Effect.provide(
        Effect.gen(function*() {
          const store = yield* EventStore.EventStore
          const kernel = yield* Kernel.Kernel
          // The run copied under a new id, hash-chained afresh, its third ModelRequested with a token cap of NaN:
          // stored as `null`, which the payload's guard refuses (a number), under hashes that match.
          const events = yield* store.readEvents(tenant.tenantId, "agent")
          const third = events.filter((e) => e.type === "ModelRequested")[2]!
          yield* TestLog.write(store, {
            runId: "copy",
            tenantId: tenant.tenantId,
            events: events.length,
            event: (seq) => {
              const e = events[seq - 1]!
              const p = e.payload
              return { stepKey: e.stepKey, payload: e === third && p._tag === "ModelRequested" ? { ...p, maxOutputTokens: Number.NaN } : p }
            }
          })
          const read = yield* Effect.either(store.readEvents(tenant.tenantId, "copy"))
          const replayed = yield* Effect.either(kernel.replay(agent("Find the overdue invoices."), ref("copy")))
          // Code that diverged onto that model call with a memoized step of the same key: a typed NonDeterminism (the
          // step tells the call apart without decoding it), not a defect thrown by the payload's getter.
          const diverged = Workflow.make({
            name: "lazy.agent",
            input: Schema.Struct({ turns: Schema.Number }),
            output: Schema.Array(Schema.String),
            run: (_input, ctx) => Effect.map(ctx.step("said", Effect.succeed("x"), Schema.String, { key: third.stepKey }), (said) => [said])
          })
          const divergedExit = yield* Effect.exit(kernel.replay(diverged, ref("copy")))
          return { read, replayed, seq: third.seq, divergedExit }
        }),
        layer
      )
      const reason = new RegExp(`corrupt row \\(run copy seq ${outcome.seq}\\), column payload`)
      expect(Either.isLeft(outcome.read) && outcome.read.left).toMatchObject({ _tag: "StoreError", operation: "readEvents", reason: expect.stringMatching(reason) })
      expect(Either.isLeft(outcome.replayed) && outcome.replayed.left).toMatchObject({ _tag: "StoreError", operation: "readEvents", reason: expect.stringMatching(reason) })
      expect(Exit.isFailure(outcome.divergedExit) && Cause.failureOption(outcome.divergedExit.cause)).toMatchObject({ _tag: "Some", value: { _tag: "NonDeterminism" } })
    }))
})
