// A process of the crash tests (see ../crash.test.ts): runs a workflow (or an AutonomousAgent with the experience
// extension and autoReflect) that answers, reflects and saves the rule it learned. `crash-before-save` / `crash-after-save` SIGKILL the process just before / just after the rules are
// written; `resume` runs the same run again with an empty model script, so every model step must come from the log.
import { Effect, Layer, Schema } from "effect"
import { AutonomousAgent, MemoryStore } from "@artana/agent"
import { Chat, Kernel, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { Experience, ExperienceExtension, ExperienceStore, SqlExperienceStore } from "../../src/index.js"

const [filename = "", mode = "resume", paradigm = "workflow", runId = "run-1"] = process.argv.slice(2)
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 5 })

const die = Effect.sync(() => process.kill(process.pid, "SIGKILL"))

const crashing = (store: ExperienceStore.Service): ExperienceStore.Service => ({
  ...store,
  saveRules: (rules, options) =>
    mode === "crash-before-save"
      ? Effect.zipRight(die, store.saveRules(rules, options))
      : mode === "crash-after-save"
      ? Effect.tap(store.saveRules(rules, options), () => die)
      : store.saveRules(rules, options)
})

const learn = (store: ExperienceStore.Service) =>
  Workflow.make({
    name: "learn",
    input: Schema.Struct({ request: Schema.String }),
    output: Schema.String,
    run: ({ request }, ctx) =>
      Effect.gen(function*() {
        const rules = yield* Experience.fetchRules(store, ctx, { taskCategory: "booking" })
        const answer = yield* ctx.chat({ messages: [Chat.system(Experience.render(rules) || "You book flights."), Chat.user(request)] })
        const learned = yield* Experience.reflect(ctx, { taskCategory: "booking", messages: answer.messages, outcome: "success", key: "turn_1_reflection" })
        yield* Experience.saveRules(store, ctx, { taskCategory: "booking", rules: learned })
        return answer.output
      })
  })

const script = mode === "resume" ? [] : [
  ScriptedModel.text("Booked for 2026-03-15"),
  ScriptedModel.json({ extractedRules: [{ ruleType: "fact", content: "book_flight takes ISO dates" }] })
]

const sqlite = SqliteStore.layer({ filename })
const live = Layer.provideMerge(
  Kernel.layer(),
  Layer.mergeAll(sqlite, ScriptedModel.layer(script), ToolRegistry.layer([]), MemoryStore.layerMemory, SqlExperienceStore.layer().pipe(Layer.provide(sqlite)))
)

const program = Effect.gen(function*() {
  const store = crashing(yield* ExperienceStore.ExperienceStore)
  if (paradigm === "agent") {
    const experience = ExperienceExtension.make(store, { taskCategory: "booking", autoReflect: true })
    const agent = AutonomousAgent.make({ name: "booker", instructions: "You book flights.", extensions: [experience], memory: false })
    return yield* agent.run({ runId, tenant, prompt: "Book LHR-JFK on March 15" })
  }
  const kernel = yield* Kernel.Kernel
  return yield* kernel.execute(learn(store), { runId, tenant, input: { request: "Book LHR-JFK on March 15" } })
})

Effect.runPromise(Effect.provide(program, live)).then(
  (result) => console.log(JSON.stringify(result)),
  (error: unknown) => {
    console.log(JSON.stringify({ failed: String(error) }))
    process.exitCode = 1
  }
)
