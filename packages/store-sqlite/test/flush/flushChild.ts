// The child of ../walFlush.test.ts: `node --import tsx flushChild.ts FILE SCENARIO [SYNC_OFF_LOOP]`, with flushGate.c
// preloaded and FLUSH_GATE / FLUSH_FAIL naming the files that control it; SYNC_OFF_LOOP is the store's `syncOffLoop`
// ("groups" when not given). Prints one line of JSON: what the scenario observed. Two runs append together throughout, so
// their appends are group-committed (a run appending alone commits in place), except in "gate-alone": one run alone.
// - gate, gate-alone: the runs' starts appended; then, with the gate closed (every -wal flush waits), a step of each appended,
//   while callbacks, turn after turn of the event loop, open the gate once a second connection sees the steps'
//   commit. Reports whether the gate was opened before the steps were answered, and whether a flush gave up waiting
//   for it (the loop was blocked until then).
// - fail: the runs' starts appended; then, while flushes fail, a step of each appended, then the next steps, in a
//   transaction and not, statements of the client that write, and a step from a second store on the file; then, once
//   flushes work again, a statement while another connection holds a read snapshot (the store's busy timeout is an
//   hour), and, the reader gone, the next steps and
//   the statement again. Reports the outcomes and, from a second store on the file opened afterwards, the runs' logs.
import * as fs from "node:fs"
import * as SqlClient from "@effect/sql/SqlClient"
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
  Layer.build(SqliteStore.layer({ filename, syncOffLoop: syncOffLoop === "always" ? "always" : "groups", busyTimeout: "1 hour" })),
  (context) => ({ store: Context.get(context, EventStore.EventStore), sql: Context.get(context, SqlClient.SqlClient) })
)

type Outcome = Either.Either<unknown, { readonly _tag: string; readonly reason?: string; readonly cause?: unknown }>
/** "ok", or the error's tag and reason (a SqlError's: its cause's message). */
const described = (outcome: Outcome) =>
  Either.match(outcome, {
    onLeft: (error) => `${error._tag}: ${error.reason ?? (error.cause instanceof Error ? error.cause.message : "")}`,
    onRight: () => "ok"
  })

/** Each run's log as the store holds it (after a failed append, which may or may not be in it). */
const reread = (store: EventStore.Service, logs: Record<string, Array<Event.Event>>) =>
  Effect.forEach(RUNS, (runId) => Effect.map(store.readEvents("acme", runId), (events) => void logs[runId]!.splice(0, Infinity, ...events)))

/** Appends `payload` to run `runId`'s log, kept on success. */
const appendOne = (store: EventStore.Service, logs: Record<string, Array<Event.Event>>, runId: string, payload: Event.EventPayload) => {
  const events = TestLog.chain(runId, "acme", logs[runId]!, [payload])
  return Effect.tap(store.append({ runId, tenantId: "acme", expectedSeq: logs[runId]!.length, events }), () => logs[runId]!.push(...events))
}

/** Appends `payload` to each run's log at once (one turn: one group); each outcome. */
const together = (store: EventStore.Service, logs: Record<string, Array<Event.Event>>, payload: (runId: string) => Event.EventPayload) =>
  Effect.forEach(RUNS, (runId) => Effect.either(appendOne(store, logs, runId, payload(runId))), { concurrency: "unbounded" })

const step = (name: string) => (): Event.EventPayload => ({ _tag: "StepCompleted", name, value: name })

const program = Effect.scoped(Effect.gen(function*() {
  const { sql, store } = yield* openStore
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
  // While syncs fail: the group's appends fail, and so does every write after (each tries a checkpoint, which fails).
  fs.writeFileSync(failFile, "")
  const failed = (yield* together(store, logs, step("s1"))).map(described)
  yield* reread(store, logs)
  const refused = {
    appends: (yield* together(store, logs, step("s2"))).map(described),
    inTransaction: described(yield* Effect.either(sql.withTransaction(appendOne(store, logs, "a", step("s2")())))),
    statement: described(yield* Effect.either(sql`CREATE TABLE t (x)`)),
    // A write that returns rows: the driver takes it for a read.
    returning: described(yield* Effect.either(sql`DELETE FROM events WHERE run_id = 'none' RETURNING seq`)),
    // A second store on the file, in this process: it knows of the failure too.
    reopened: described(yield* Effect.either(Effect.scoped(Effect.flatMap(openStore, ({ store: again }) => appendOne(again, logs, "a", step("s2")())))))
  }
  // Syncs work again, but a reader holds a snapshot: the checkpoint cannot empty the -wal file, and the write is refused
  // at once (the store's busy timeout is an hour: a checkpoint that waited for the reader would hang here).
  fs.rmSync(failFile)
  const reader = new (SqliteStore.driver())(filename, { readonly: true })
  reader.exec("BEGIN")
  reader.prepare("SELECT count(*) FROM events").get()
  const whileRead = described(yield* Effect.either(sql`CREATE TABLE t (x)`))
  reader.exec("COMMIT")
  reader.close()
  // Then the next write checkpoints first, and everything is written.
  yield* reread(store, logs)
  const after = { appends: (yield* together(store, logs, step("s2"))).map(described), statement: described(yield* Effect.either(sql`CREATE TABLE t (x)`)) }
  const reopened = yield* Effect.scoped(Effect.flatMap(openStore, ({ store: again }) => Effect.forEach(RUNS, (runId) => again.readEvents("acme", runId))))
  return { failed, refused, whileRead, after, stored: reopened.map((log) => log.map((e) => e.seq)), verified: reopened.every((log, i) => Verify.verifyEvents(RUNS[i]!, log).ok) }
}))

Effect.runPromise(program).then((result) => console.log(JSON.stringify(result)), (error: unknown) => {
  console.error(error)
  process.exit(1)
})
