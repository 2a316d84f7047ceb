// The experience extension in a real AutonomousAgent, on the scripted model and a SQLite file: the section in the
// prompt, autoReflect after the answer (its own step key), reinforcement by outcome, exact replays.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { AutonomousAgent, MemoryStore } from "@artana/agent"
import { type Chat, EventStore, Kernel, type ModelPort, Tenant, Tool, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { ExperienceExtension, ExperienceStore, SqlExperienceStore } from "@artana/experience"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-experience-agent-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const tempDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 5 })
const CATEGORY = "flight-booking"
const RULE = "book_flight takes dates as YYYY-MM-DD (ISO 8601)"

/** A booking tool that only understands ISO dates, and says so when given anything else. */
const bookFlight = Tool.make({
  name: "book_flight",
  description: "Books a flight",
  parameters: Schema.Struct({ from: Schema.String, to: Schema.String, date: Schema.String }),
  handler: ({ date, from, to }) =>
    /^\d{4}-\d{2}-\d{2}$/.test(date)
      ? Effect.succeed({ booked: `${from}-${to} on ${date}` })
      : Effect.fail(new Error(`invalid date "${date}"`))
})

const systemOf = (request: ModelPort.ModelRequest) => request.messages.find((m): m is Chat.SystemMessage => m.role === "system")?.content ?? ""

const world = (script: ReadonlyArray<ScriptedModel.Reply>, filename = tempDb()) => {
  const sqlite = SqliteStore.layer({ filename })
  const ports = Layer.mergeAll(
    sqlite,
    ScriptedModel.layer(script),
    ToolRegistry.layer([]),
    MemoryStore.layerMemory,
    SqlExperienceStore.layer().pipe(Layer.provide(sqlite))
  )
  return Layer.provideMerge(Kernel.layer(), ports)
}

const booker = (autoReflect: boolean, maxTurns?: number) =>
  Effect.map(ExperienceExtension.extension({ taskCategory: CATEGORY, autoReflect }), (experience) =>
    AutonomousAgent.make({ name: "booker", instructions: "You book flights.", tools: [bookFlight], extensions: [experience], memory: false, maxTurns }))

describe("ExperienceExtension in an AutonomousAgent", () => {
  it.effect("run 1 fails twice on the date, succeeds, and learns the rule; run 2 has it in its prompt and books at once", () =>
    Effect.gen(function*() {
      const agent = yield* booker(true)
      const store = yield* ExperienceStore.ExperienceStore
      const model = yield* ScriptedModel.ScriptedModel
      const log = yield* EventStore.EventStore

      const first = yield* agent.run({ runId: "run-1", tenant, prompt: "Book LHR to JFK on March 15, 2026" })
      expect(first).toMatchObject({ status: "completed", output: { output: "Booked LHR-JFK on 2026-03-15", turns: 4 } })
      const events = yield* log.readEvents("acme", "run-1")
      const reflection = events.filter((e) => e.stepKey === "turn_4_reflection").map((e) => e.payload._tag)
      expect(reflection).toEqual(["ModelRequested", "ModelCompleted"])
      expect(yield* store.getRules("acme", CATEGORY)).toMatchObject([{ ruleType: "fact", content: RULE, successCount: 0, failCount: 0 }])
      expect(systemOf(model.requests()[0]!)).not.toContain("[PAST LEARNINGS FOR THIS TASK]")

      const callsBefore = model.calls()
      const second = yield* agent.run({ runId: "run-2", tenant, prompt: "Book CDG to SFO on April 2, 2026" })
      expect(second).toMatchObject({ status: "completed", output: { turns: 2 } })
      expect(systemOf(model.requests()[callsBefore]!)).toContain(`[PAST LEARNINGS FOR THIS TASK]\nFACT: ${RULE}`)
      // The rule was in the prompt of a successful run: one success.
      expect(yield* store.getRules("acme", CATEGORY)).toMatchObject([{ content: RULE, successCount: 1, failCount: 0 }])

      // A replay runs nothing and writes nothing: the rules and the model's calls are as they were.
      const calls = model.calls()
      expect(yield* agent.replay({ tenantId: "acme", runId: "run-2" })).toMatchObject({ status: "completed" })
      expect(model.calls()).toBe(calls)
      expect(yield* store.getRules("acme", CATEGORY)).toMatchObject([{ successCount: 1 }])
    }).pipe(Effect.provide(world([
      ScriptedModel.toolCall("book_flight", { from: "LHR", to: "JFK", date: "03/15/2026" }),
      ScriptedModel.toolCall("book_flight", { from: "LHR", to: "JFK", date: "March 15, 2026" }),
      ScriptedModel.toolCall("book_flight", { from: "LHR", to: "JFK", date: "2026-03-15" }),
      ScriptedModel.text("Booked LHR-JFK on 2026-03-15"),
      ScriptedModel.json({ extractedRules: [{ ruleType: "fact", content: RULE }] }, {
        expect: (request) => (request.tools.length === 0 && systemOf(request).includes("review a finished run") ? undefined : "a reflection request without tools")
      }),
      ScriptedModel.toolCall("book_flight", { from: "CDG", to: "SFO", date: "2026-04-02" }),
      ScriptedModel.text("Booked CDG-SFO on 2026-04-02"),
      ScriptedModel.json({ extractedRules: [] })
    ]))))

  it.effect("a run that fails (max turns) reflects on its failure and counts one failure for the rules it had", () =>
    Effect.gen(function*() {
      const store = yield* ExperienceStore.ExperienceStore
      const [seeded] = yield* store.saveRules([{ tenantId: "acme", taskCategory: CATEGORY, ruleType: "win_pattern", content: "Ask for the date first" }])
      const agent = yield* booker(true, 1)
      const model = yield* ScriptedModel.ScriptedModel
      const failed = yield* Effect.flip(agent.run({ runId: "run-f", tenant, prompt: "Book something" }))
      expect(failed).toMatchObject({ _tag: "MaxTurnsExceeded" })
      const reflection = model.requests()[1]!
      expect(reflection.messages.map((m) => m.content ?? "").join("\n")).toContain("Outcome: failure")
      // The rule that was in a failed run's prompt now ranks below the new one.
      expect(yield* store.getRules("acme", CATEGORY)).toMatchObject([
        { content: "Do not call book_flight before the date is known", ruleType: "anti_pattern", successCount: 0, failCount: 0 },
        { ruleId: seeded!.ruleId, successCount: 0, failCount: 1 }
      ])
    }).pipe(Effect.provide(world([
      ScriptedModel.toolCall("book_flight", { from: "A", to: "B", date: "soon" }),
      ScriptedModel.json({ extractedRules: [{ ruleType: "anti_pattern", content: "Do not call book_flight before the date is known" }] })
    ]))))

  it.effect("without autoReflect the rules are in the prompt, and nothing is reflected, saved or counted", () =>
    Effect.gen(function*() {
      const store = yield* ExperienceStore.ExperienceStore
      yield* store.saveRules([{ tenantId: "acme", taskCategory: CATEGORY, ruleType: "fact", content: RULE }])
      const agent = yield* booker(false)
      const model = yield* ScriptedModel.ScriptedModel
      expect(yield* agent.run({ runId: "run-n", tenant, prompt: "Book" })).toMatchObject({ status: "completed" })
      expect(model.calls()).toBe(1)
      expect(systemOf(model.requests()[0]!)).toContain(`FACT: ${RULE}`)
      expect(yield* store.getRules("acme", CATEGORY)).toMatchObject([{ successCount: 0, failCount: 0 }])
    }).pipe(Effect.provide(world([ScriptedModel.text("Nothing to book")]))))

  it.effect("another tenant's agent run neither sees nor reinforces the rules", () =>
    Effect.gen(function*() {
      const store = yield* ExperienceStore.ExperienceStore
      yield* store.saveRules([{ tenantId: "acme", taskCategory: CATEGORY, ruleType: "fact", content: RULE }])
      const agent = yield* booker(true)
      const model = yield* ScriptedModel.ScriptedModel
      const globex = Tenant.TenantContext.make({ tenantId: "globex", capabilities: [], budgetUsdLimit: 5 })
      expect(yield* agent.run({ runId: "g-1", tenant: globex, prompt: "Book" })).toMatchObject({ status: "completed" })
      expect(systemOf(model.requests()[0]!)).not.toContain("PAST LEARNINGS")
      expect(yield* store.getRules("acme", CATEGORY)).toMatchObject([{ successCount: 0, failCount: 0 }])
      expect(yield* store.getRules("globex", CATEGORY)).toMatchObject([{ content: "Globex books in EUR" }])
    }).pipe(Effect.provide(world([
      ScriptedModel.text("Booked"),
      ScriptedModel.json({ extractedRules: [{ ruleType: "fact", content: "Globex books in EUR" }] })
    ]))))
})
