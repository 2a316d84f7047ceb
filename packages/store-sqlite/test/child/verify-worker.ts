// Replays a long run with the verified read's worker ready (core's `verifyWorker`), prints the result and how many
// events the worker hashed, and ends by returning from its module (no exit call): the worker must not keep the process
// alive. `node --import tsx verify-worker.ts FILE RUN`.
import { Kernel, ModelPort, ToolRegistry } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { Effect, Layer } from "effect"
// The built core's worker module: the instance `@artana/core` (its build) loads.
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
const result = await Effect.runPromise(
  Effect.provide(Effect.flatMap(Kernel.Kernel, (k) => k.replay(TestLog.LongRun.workflow, { tenantId: tenant.tenantId, runId })), layer)
)
process.stdout.write(`${JSON.stringify({ ...result, hashedByWorker: VerifyWorker.hashedSoFar() })}\n`)
