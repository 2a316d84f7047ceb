// The child of ../walFlush.test.ts: `node --import tsx flushChild.ts FILE SCENARIO [SYNC_OFF_LOOP]`, with flushGate.c
// preloaded and FLUSH_GATE / FLUSH_FAIL naming the files that control it; SYNC_OFF_LOOP is the store's `syncOffLoop`
// ("groups" by default). Prints one line of JSON: what the scenario observed. Two runs append together throughout, so
// their appends are group-committed (a run appending alone commits in place), except in "gate-alone": one run alone.
// - gate, gate-alone: the runs' starts appended; then, with the gate closed (every -wal flush waits), a step of each appended,
//   while callbacks, turn after turn of the event loop, open the gate once a second connection sees the steps'
//   commit. Reports whether the gate was opened before the steps were answered, and whether a flush gave up waiting
//   for it (the loop was blocked until then).
// - fail: the runs' starts appended; then a step of each appended while flushes fail, then another once they work
//   again. Reports the outcomes and, from a second store on the file opened afterwards, the runs' logs.
import * as fs from "node:fs"
import { Context, Effect, Either, Layer } from "effect"
import { type Event, EventStore, Tenant, Verify } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "../../src/index.js"

const [filename = "", scenario = "gate", syncOffLoop = "groups"] = process.argv.slice(2)
const gateFile = process.env.FLUSH_GATE ?? ""
const failFile = process.env.FLUSH_FAIL ?? ""
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
// One run alone (scenario "gate-alone") or two together.
const RUNS = scenario === "gate-alone" ? ["a"] as const : ["a", "b"] as const

const openStore = Effect.map(
  Layer.build(SqliteStore.layer({ filename, syncOffLoop: syncOffLoop === "always" ? "always" : "groups" })),
  (context) => Context.get(context, EventStore.EventStore)
)

type Outcome = Either.Either<void, { readonly _tag: string; readonly reason?: string }>
const described = (outcome: Outcome) => Either.match(outcome, { onLeft: (error) => `${error._tag}: ${error.reason ?? ""}`, onRight: () => "ok" })

/** Appends `payload` to each run's log at once (one turn: one group); each outcome, the log kept on success. */
const together = (store: EventStore.Service, logs: Record<string, Array<Event.Event>>, payload: (runId: string) => Event.EventPayload) =>
  Effect.forEach(RUNS, (runId) => {
    const events = TestLog.chain(runId, "acme", logs[runId]!, [payload(runId)])
    return Effect.either(Effect.tap(store.append({ runId, tenantId: "acme", expectedSeq: logs[runId]!.length, events }), () => logs[runId]!.push(...events)))
  }, { concurrency: "unbounded" })

const step = (name: string) => (): Event.EventPayload => ({ _tag: "StepCompleted", name, value: name })

const program = Effect.scoped(Effect.gen(function*() {
  const store = yield* openStore
  const logs: Record<string, Array<Event.Event>> = Object.fromEntries(RUNS.map((runId) => [runId, []]))
  yield* together(store, logs, () => ({ _tag: "RunStarted", workflow: "w", input: null, tenant }))
  if (scenario !== "fail") {
    fs.writeFileSync(gateFile, "")
    // Turn after turn of the loop, a second connection looks for the steps' commit, and opens the gate once it sees
    // it: while the flush waits, on a loop the flush does not block.
    const probe = new (SqliteStore.driver())(filename, { readonly: true })
    const committed = probe.prepare("SELECT count(*) AS n FROM events WHERE seq = 2")
    let opened = false
    let answered = false
    const look = () => {
      if (answered) return
      if ((committed.get() as { readonly n: number }).n < RUNS.length) return void setImmediate(look)
      fs.rmSync(gateFile)
      opened = true
    }
    setImmediate(look)
    const outcomes = yield* together(store, logs, step("s1"))
    answered = true
    probe.close()
    return { openedBeforeAnswer: opened, flushGaveUp: fs.existsSync(`${gateFile}.timedout`), outcomes: outcomes.map(described) }
  }
  fs.writeFileSync(failFile, "")
  const failed = (yield* together(store, logs, step("s1"))).map(described)
  fs.rmSync(failFile)
  const after = (yield* together(store, logs, step("s2"))).map(described)
  const reopened = yield* Effect.scoped(Effect.flatMap(openStore, (again) => Effect.forEach(RUNS, (runId) => again.readEvents("acme", runId))))
  return { failed, after, stored: reopened.map((log) => log.map((e) => e.seq)), verified: reopened.every((log, i) => Verify.verifyEvents(RUNS[i]!, log).ok) }
}))

Effect.runPromise(program).then((result) => console.log(JSON.stringify(result)), (error: unknown) => {
  console.error(error)
  process.exit(1)
})
