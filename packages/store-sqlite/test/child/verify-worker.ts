// Replays a long run with the verified read's worker ready (core's `verifyWorker`) and the store's read-ahead worker off,
// then again with the read-ahead worker ready (`readWorker`), prints the result, how many events the verify worker
// hashed and how many pages the read-ahead worker read, and ends by returning from its module (no exit call): neither
// worker may keep the process alive. `node --import tsx verify-worker.ts FILE RUN`.
import { EventStore, Kernel, ModelPort, ToolRegistry } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { Context, Effect, Layer } from "effect"
// The built core's worker module: the instance `@artana/core` (its build) loads.
import * as ReadWorker from "../../../core/dist/internal/readWorker.js"
import * as VerifyWorker from "../../../core/dist/internal/verifyWorker.js"
import { SqliteStore } from "../../src/index.js"
import { tenant } from "./workflows.js"

const [filename, runId] = process.argv.slice(2)
if (filename === undefined || runId === undefined) throw new Error("usage: verify-worker.ts FILE RUN")

const noModel = ModelPort.make({ defaultModel: "none", generate: () => Effect.dieMessage("a long run calls no model") })
const layer = Layer.provideMerge(
  Kernel.layer({ workflows: [TestLog.LongRun.workflow] }),
  Layer.mergeAll(SqliteStore.layer({ filename }), Layer.succeed(ModelPort.ModelPort, noModel), ToolRegistry.layer([]))
)
if (!(await VerifyWorker.ready())) throw new Error("the verify worker did not start")
const replay = Effect.flatMap(Kernel.Kernel, (k) => k.replay(TestLog.LongRun.workflow, { tenantId: tenant.tenantId, runId }))
const result = await Effect.runPromise(
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(layer)
    ReadWorker.use(false)
    yield* Effect.provide(replay, context)
    ReadWorker.use(true)
    const ahead = ReadWorker.aheadOf(Context.get(context, EventStore.EventStore))
    if (ahead === undefined || !(yield* Effect.promise(ahead.ready))) {
      return yield* Effect.dieMessage("the read-ahead worker did not start")
    }
    return yield* Effect.provide(replay, context)
  }))
)
process.stdout.write(`${JSON.stringify({ ...result, hashedByWorker: VerifyWorker.hashedSoFar(), readAheadPages: ReadWorker.pagesSoFar() })}\n`)
