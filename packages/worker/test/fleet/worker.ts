// One worker process of the fleet test (see ../fleet.test.ts): a `Worker.run` on PostgreSQL whose "pipeline"
// workflow makes five calls to an idempotent tool. Every execution of the tool appends one line to a shared file,
// `<idempotencyKey> <workerId> <pid>`, so the parent can see which process executed which step, and how often.
// SIGTERM interrupts the worker, which releases its tasks, and the process exits 0.
import { Effect, Fiber, Layer, Schema } from "effect"
import { Kernel, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import * as fs from "node:fs"
import { Worker } from "../../src/index.js"

const [url = "", effectsFile = "", workerId = "worker", concurrency = "4"] = process.argv.slice(2)

const effect = Tool.make({
  name: "effect",
  description: "A side effect the receiving system deduplicates by idempotency key",
  parameters: Schema.Struct({ step: Schema.Number }),
  idempotent: true,
  handler: ({ step }, ctx) =>
    Effect.gen(function*() {
      fs.appendFileSync(effectsFile, `${ctx.idempotencyKey} ${workerId} ${process.pid}\n`)
      // Work after the side effect: a kill here leaves the call in doubt (done, but not known to be done).
      yield* Effect.sleep(`${5 + Math.floor(Math.random() * 10)} millis`)
      return { step }
    })
})

const pipeline = Workflow.make({
  name: "pipeline",
  input: Schema.Struct({ n: Schema.Number }),
  output: Schema.Number,
  run: ({ n }, ctx) =>
    Effect.gen(function*() {
      let sum = 0
      for (let step = 1; step <= 5; step++) sum += (yield* ctx.tool(effect, { step })).step
      return n * 100 + sum
    })
})

const workflows = [pipeline]
const ports = Layer.mergeAll(PostgresStore.layer({ url, pool: { max: Number(concurrency) + 2 } }), ScriptedModel.layer([]), ToolRegistry.layer([effect]))
const live = Layer.provideMerge(Kernel.layer({ workflows }), ports)

const fiber = Effect.runFork(
  Worker.run({ workflows, concurrency: Number(concurrency), leaseSeconds: 5, pollInterval: "500 millis", workerId }).pipe(
    Effect.provide(live),
    Effect.tapErrorCause((cause) => Effect.sync(() => console.error(cause)))
  )
)
process.on("SIGTERM", () => {
  Effect.runPromise(Fiber.interrupt(fiber)).then(() => process.exit(0), () => process.exit(1))
})
