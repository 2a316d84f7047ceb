// One writer of the multi-process race (see ../processes.test.ts): `writer.ts URL BARRIER_DIR NAME`. Once started it
// writes BARRIER_DIR/NAME.ready and waits for BARRIER_DIR/go (the test writes it once every writer is ready); then it
// opens the store on a fresh database, so every writer runs the migrations at once, then creates the run and appends
// at a fixed expectedSeq. Prints one JSON line: how each step ended.
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Either, Layer } from "effect"
import { EventStore, Tenant } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { PostgresStore } from "../../src/index.js"

const [url = "", barrier = "", name = "writer"] = process.argv.slice(2)
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const runId = "race"

// A typed error other than the expected conflict carries its message, so a failing test shows it.
const outcome = (result: Either.Either<void, { readonly _tag: string; readonly message: string }>) =>
  Either.match(result, { onLeft: (e) => (e._tag === "SequenceConflict" ? e._tag : `${e._tag}: ${e.message}`), onRight: () => "ok" })

const program = Effect.gen(function*() {
  const store = yield* EventStore.EventStore
  // Every writer also has a run of its own: migrating did not get in the way of writing.
  yield* store.append({ runId: `own-${name}`, tenantId: "acme", expectedSeq: 0, events: TestLog.chain(`own-${name}`, "acme", [], [{ _tag: "RunStarted", workflow: name, input: null, tenant }]) })
  const created = yield* Effect.either(store.append({
    runId,
    tenantId: "acme",
    expectedSeq: 0,
    events: TestLog.chain(runId, "acme", [], [
      { _tag: "RunStarted", workflow: name, input: null, tenant },
      { _tag: "StepCompleted", name, value: name }
    ])
  }))
  // Whoever won, the run now holds its two events; everyone races to append the third.
  const head = (yield* store.readEvents("acme", runId)).slice(0, 2)
  const next = yield* Effect.either(store.append({
    runId,
    tenantId: "acme",
    expectedSeq: 2,
    events: TestLog.chain(runId, "acme", head, [{ _tag: "StepCompleted", name: `${name}-next`, value: name }])
  }))
  return { name, created: outcome(created), next: outcome(next) }
})

const main = Effect.gen(function*() {
  fs.writeFileSync(path.join(barrier, `${name}.ready`), "")
  while (!fs.existsSync(path.join(barrier, "go"))) yield* Effect.sleep("5 millis")
  // Three stores per process, opened at once (as a process running several services might): more
  // migrations in flight at the same moment, across processes and within one.
  const [context] = yield* Effect.all([1, 2, 3].map(() => Layer.build(PostgresStore.layer({ url, pool: { max: 2 } }))), { concurrency: "unbounded" })
  return yield* Effect.provide(program, context!)
}).pipe(Effect.scoped)

Effect.runPromise(main).then(
  (result) => console.log(JSON.stringify(result)),
  (error: unknown) => {
    console.log(JSON.stringify({ name, failed: String(error) }))
    process.exitCode = 1
  }
)
