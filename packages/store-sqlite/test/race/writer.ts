// One writer of the multi-process race (see ../processes.test.ts): `writer.ts FILENAME BARRIER_DIR NAME`. Once started it
// writes BARRIER_DIR/NAME.ready and waits for BARRIER_DIR/go (the test writes it once every writer is ready); then it
// opens the store, so every writer runs the migrations on the same fresh file at once, and appends at a fixed
// expectedSeq twice. Prints one JSON line: how each append ended.
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Either } from "effect"
import { EventStore, Tenant } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "../../src/index.js"

const [filename = "", barrier = "", name = "writer"] = process.argv.slice(2)
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const runId = "race"

const outcome = (result: Either.Either<void, { readonly _tag: string }>) => Either.match(result, { onLeft: (e) => e._tag, onRight: () => "ok" })

const program = Effect.gen(function*() {
  const store = yield* EventStore.EventStore
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
  return yield* Effect.provide(program, SqliteStore.layer({ filename }))
})

Effect.runPromise(main).then(
  (result) => console.log(JSON.stringify(result)),
  (error: unknown) => {
    console.log(JSON.stringify({ name, failed: String(error) }))
    process.exitCode = 1
  }
)
