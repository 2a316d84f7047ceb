// The group-commit crash test's writer (see ../groupCommit.test.ts): `node --import tsx group-writer.ts FILE RUNS`.
// RUNS runs append one event at a time, all at once, for ever; after each append is answered it prints
// `<runId> <seq>` on its own line. The test SIGKILLs it: every line printed is an append the store acknowledged.
import { Effect } from "effect"
import { type Event, EventStore, Tenant } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "../../src/index.js"

const [filename = "", runsText = "1"] = process.argv.slice(2)
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

const writer = (store: EventStore.Service, runId: string) =>
  Effect.gen(function*() {
    const log: Array<Event.Event> = []
    for (let i = 0; ; i++) {
      const payload = i === 0
        ? { _tag: "RunStarted", workflow: "group", input: null, tenant } as const
        : { _tag: "StepCompleted", name: `step-${i}`, value: i } as const
      const events = TestLog.chain(runId, "acme", log, [payload])
      yield* store.append({ runId, tenantId: "acme", expectedSeq: log.length, events })
      log.push(...events)
      process.stdout.write(`${runId} ${events[0]!.seq}\n`)
    }
  })

const program = Effect.flatMap(EventStore.EventStore, (store) =>
  Effect.all(Array.from({ length: Number(runsText) }, (_, i) => writer(store, `run-${i}`)), { concurrency: "unbounded", discard: true }))

Effect.runPromise(Effect.provide(program, SqliteStore.layer({ filename }))).catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
