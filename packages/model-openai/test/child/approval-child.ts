// The process the streamed-approval crash test kills: `node --import tsx approval-child.ts DB BASE_URL LOG RUN_ID`.
// It starts the payout on a SQLite file; the model's first turn streams from the test's server and asks for a
// transfer, which waits for approval. The process prints the paused result and stays up (holding the run's kernel)
// until it is SIGKILLed.
import { Kernel, ToolRegistry } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { Effect, Layer } from "effect"
import { OpenAiModel } from "../../src/index.js"
import { payout, tenant, transferFunds } from "./payout.js"

const [filename, baseURL, log, runId] = process.argv.slice(2)
if (filename === undefined || baseURL === undefined || log === undefined || runId === undefined) {
  throw new Error("usage: approval-child.ts DB BASE_URL LOG RUN_ID")
}

const workflow = payout(log)
const layer = Layer.provideMerge(
  Kernel.layer({ workflows: [workflow] }),
  Layer.mergeAll(SqliteStore.layer({ filename }), OpenAiModel.layer({ baseURL, stream: true }), ToolRegistry.layer([transferFunds(log)]))
)
await Effect.runPromise(
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const result = yield* kernel.execute(workflow, { runId, tenant, input: "Move $250 from acc-1 to acc-2." })
    process.stdout.write(`${JSON.stringify(result)}\n`)
    // Waits here, its kernel up, until the test kills it.
    yield* Effect.never
  }).pipe(Effect.provide(layer))
)
