// What the tests of long verified reads share (verifyWorker.test.ts, readAhead.test.ts): a kernel on a SQLite file whose
// workflows call no model, and a file holding a long paused run written fast.
import { Effect, Layer, Redacted, Schema, type Scope } from "effect"
import { EventStore, Kernel, ModelPort, ToolRegistry, Workflow } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { workDir } from "./helpers.js"
import { tenant } from "./child/workflows.js"

const noModel = ModelPort.make({ defaultModel: "none", generate: () => Effect.dieMessage("a long run calls no model") })

/** The kernel (with `TestLog.LongRun`'s workflow, and `auditKey` when given) on the SQLite file `db`. */
export const kernelOn = (db: string, auditKey?: string): Layer.Layer<Kernel.Kernel | SqliteStore.Services, unknown> =>
  Layer.provideMerge(
    Kernel.layer({ workflows: [TestLog.LongRun.workflow], auditKey: auditKey === undefined ? undefined : Redacted.make(auditKey) }),
    Layer.mergeAll(SqliteStore.layer({ filename: db }), Layer.succeed(ModelPort.ModelPort, noModel), ToolRegistry.layer([]))
  )

/** A new file holding the paused run "long" of `steps` steps (`steps + 2` events, valid chain). */
export const writtenLongRun = (steps: number): Effect.Effect<string, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const { db } = yield* workDir
    yield* Effect.provide(Effect.flatMap(EventStore.EventStore, (store) => TestLog.LongRun.write(store, { runId: "long", tenant, steps })), kernelOn(db))
    return db
  })

/** A workflow of 700 memoized steps (702 events). */
const steps = Workflow.make({
  name: "steps",
  input: Schema.Null,
  output: Schema.Number,
  run: (_input, ctx) =>
    Effect.gen(function*() {
      for (let i = 0; i < 700; i++) yield* ctx.step("n", Effect.succeed(i), Schema.Number)
      return 700
    })
})

/** The file `db` holding the completed run `runId` of 700 steps (702 events) written by the kernel under `auditKey`. */
export const writeKeyed = (db: string, runId: string, auditKey: string): Effect.Effect<void, unknown> =>
  Effect.provide(Effect.asVoid(Effect.flatMap(Kernel.Kernel, (k) => k.execute(steps, { runId, tenant, input: null }))), kernelOn(db, auditKey))
