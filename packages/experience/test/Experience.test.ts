// Paradigm B: a durable workflow that fetches its rules in a step, puts them in its prompt, reflects at the end and
// saves what it learned, on the scripted model and a real SQLite file.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Chat, EventStore, Kernel, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Experience, ExperienceStore, SqlExperienceStore } from "@artana/experience"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-experience-wf-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
const tempDb = () => path.join(fs.mkdtempSync(path.join(root, "db-")), "artana.db")

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 5 })
const CATEGORY = "flight-booking"

/** The store, with a count of the reads that reached it. */
const counting = (store: ExperienceStore.Service) => {
  let reads = 0
  const service: ExperienceStore.Service = {
    ...store,
    getRules: (...args) => Effect.suspend(() => {
      reads++
      return store.getRules(...args)
    })
  }
  return { service, reads: () => reads }
}

/** A booking workflow that learns: its rules go into the system prompt; it reflects after answering. */
const makeBooking = (store: ExperienceStore.Service) =>
  Workflow.make({
    name: "booking",
    input: Schema.Struct({ request: Schema.String }),
    output: Schema.String,
    run: ({ request }, ctx) =>
      Effect.gen(function*() {
        const rules = yield* Experience.fetchRules(store, ctx, { taskCategory: CATEGORY })
        const system = ["You book flights.", Experience.render(rules)].filter((s) => s !== "").join("\n\n")
        const answer = yield* ctx.chat({ messages: [Chat.system(system), Chat.user(request)] })
        const learned = yield* Experience.reflect(ctx, {
          taskCategory: CATEGORY,
          messages: answer.messages,
          outcome: "success",
          knownRules: rules,
          key: "turn_1_reflection"
        })
        yield* Experience.saveRules(store, ctx, { taskCategory: CATEGORY, rules: learned })
        yield* Experience.reinforce(store, ctx, { ruleIds: rules.map((r) => r.ruleId), positive: true })
        return answer.output
      })
  })

const systemOf = (request: { readonly messages: ReadonlyArray<Chat.ChatMessage> }) => request.messages.find((m) => m.role === "system")?.content ?? ""

describe("Experience in a durable workflow", () => {
  it("renders rules as the section the prompt carries", () => {
    expect(Experience.render([])).toBe("")
    expect(Experience.render([
      { ruleId: "r1", tenantId: "t", taskCategory: "c", ruleType: "fact", content: "Dates are YYYY-MM-DD", successCount: 2, failCount: 0 },
      { ruleId: "r2", tenantId: "t", taskCategory: "c", ruleType: "anti_pattern", content: "Passing 03/15/2026\nfails", successCount: 0, failCount: 0 },
      { ruleId: "r3", tenantId: "t", taskCategory: "c", ruleType: "win_pattern", content: "Search before booking", successCount: 0, failCount: 0 }
    ])).toBe("[PAST LEARNINGS FOR THIS TASK]\nFACT: Dates are YYYY-MM-DD\nANTI_PATTERN: Passing 03/15/2026 fails\nWIN_PATTERN: Search before booking")
  })

  it.effect("run 1 learns a rule; run 2 has it in its prompt and counts it as a success; a replay re-reads nothing", () =>
    Effect.gen(function*() {
      const store = yield* ExperienceStore.ExperienceStore
      const { reads, service } = counting(store)
      const booking = makeBooking(service)
      const kernel = yield* Kernel.Kernel
      const model = yield* ScriptedModel.ScriptedModel
      const log = yield* EventStore.EventStore

      const first = yield* kernel.execute(booking, { runId: "run-1", tenant, input: { request: "Book LHR-JFK on March 15" } })
      expect(first).toMatchObject({ status: "completed", output: "Booked for 2026-03-15" })
      expect(yield* store.getRules("acme", CATEGORY)).toMatchObject([{ ruleType: "fact", content: "book_flight takes dates as YYYY-MM-DD", successCount: 0 }])
      const events = yield* log.readEvents("acme", "run-1")
      expect(events.filter((e) => e.stepKey === "turn_1_reflection").map((e) => e.payload._tag)).toEqual(["ModelRequested", "ModelCompleted"])

      const second = yield* kernel.execute(booking, { runId: "run-2", tenant, input: { request: "Book CDG-SFO on April 2" } })
      expect(second).toMatchObject({ status: "completed" })
      expect(systemOf(model.requests()[2]!)).toContain("[PAST LEARNINGS FOR THIS TASK]\nFACT: book_flight takes dates as YYYY-MM-DD")
      expect(systemOf(model.requests()[0]!)).not.toContain("PAST LEARNINGS")
      // Said again by run 2's reflection, and counted for having been in its prompt: two successes.
      expect(yield* store.getRules("acme", CATEGORY)).toMatchObject([{ content: "book_flight takes dates as YYYY-MM-DD", successCount: 2, failCount: 0 }])

      const readsBefore = reads()
      const callsBefore = model.calls()
      expect(yield* kernel.replay(booking, { tenantId: "acme", runId: "run-2" })).toMatchObject({ status: "completed" })
      expect(reads()).toBe(readsBefore)
      expect(model.calls()).toBe(callsBefore)
      expect(yield* store.getRules("acme", CATEGORY)).toMatchObject([{ successCount: 2 }])
    }).pipe(Effect.provide(world([
      ScriptedModel.text("Booked for 2026-03-15"),
      ScriptedModel.json({ extractedRules: [{ ruleType: "fact", content: "book_flight takes dates as YYYY-MM-DD" }] }),
      ScriptedModel.text("Booked for 2026-04-02"),
      ScriptedModel.json({ extractedRules: [{ ruleType: "fact", content: "book_flight takes dates as YYYY-MM-DD." }] })
    ], tempDb()))))

  it.effect("a reflection that does not decode teaches nothing and does not fail the run", () =>
    Effect.gen(function*() {
      const store = yield* ExperienceStore.ExperienceStore
      const kernel = yield* Kernel.Kernel
      const result = yield* kernel.execute(makeBooking(store), { runId: "run-x", tenant, input: { request: "Book" } })
      expect(result).toMatchObject({ status: "completed" })
      expect(yield* store.getRules("acme", CATEGORY)).toEqual([])
    }).pipe(Effect.provide(world([ScriptedModel.text("Booked"), ScriptedModel.text("I learned that dates matter")], tempDb()))))

  it.effect("rules never cross tenants: another tenant's runs neither see nor reinforce them", () =>
    Effect.gen(function*() {
      const store = yield* ExperienceStore.ExperienceStore
      const kernel = yield* Kernel.Kernel
      const model = yield* ScriptedModel.ScriptedModel
      const other = Tenant.TenantContext.make({ tenantId: "globex", capabilities: [], budgetUsdLimit: 5 })
      yield* kernel.execute(makeBooking(store), { runId: "a-1", tenant, input: { request: "Book" } })
      yield* kernel.execute(makeBooking(store), { runId: "b-1", tenant: other, input: { request: "Book" } })
      expect(systemOf(model.requests()[2]!)).not.toContain("PAST LEARNINGS")
      expect(yield* store.getRules("acme", CATEGORY)).toMatchObject([{ content: "Always confirm the fare", successCount: 0 }])
      expect(yield* store.getRules("globex", CATEGORY)).toEqual([])
    }).pipe(Effect.provide(world([
      ScriptedModel.text("Booked"),
      ScriptedModel.json({ extractedRules: [{ ruleType: "win_pattern", content: "Always confirm the fare" }] }),
      ScriptedModel.text("Booked"),
      ScriptedModel.json({ extractedRules: [] })
    ], tempDb()))))
})

/** Kernel on a SQLite file, its ExperienceStore on the same file, and the scripted model. */
function world(script: ReadonlyArray<ScriptedModel.Reply>, filename: string) {
  const store = SqliteStore.layer({ filename })
  const ports = Layer.mergeAll(store, ScriptedModel.layer(script), ToolRegistry.layer([]), SqlExperienceStore.layer().pipe(Layer.provide(store)))
  return Layer.provideMerge(Kernel.layer(), ports)
}
