// A worker process of the crash tests (see ../processes.test.ts). Every side effect of its workflow appends a
// line to a file, so the parent can count them across processes. With the gate "closed", the "pack" step hangs
// (after writing "waiting:<workerId>"): the place where the parent kills the process. SIGTERM interrupts the
// worker, which releases its tasks, and the process exits 0.
import { Effect, Fiber, Layer, Schema } from "effect"
import { Kernel, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import { Worker } from "../../src/index.js"

const [filename = "", effectsFile = "", workerId = "worker", gate = "open"] = process.argv.slice(2)
const record = (line: string) => Effect.sync(() => fs.appendFileSync(effectsFile, `${line}\n`))

const charge = Tool.make({
  name: "charge",
  description: "Charges a customer (idempotent by key)",
  parameters: Schema.Struct({ customer: Schema.String }),
  idempotent: true,
  handler: ({ customer }, ctx) => Effect.as(record(`charge:${customer}:${ctx.idempotencyKey}`), { charged: true })
})

const order = Workflow.make({
  name: "order",
  input: Schema.Struct({ customer: Schema.String }),
  output: Schema.String,
  run: ({ customer }, ctx) =>
    Effect.gen(function*() {
      yield* ctx.tool(charge, { customer })
      yield* ctx.step("reserve", Effect.as(record("reserve"), 1), Schema.Number)
      yield* ctx.step("pack", gate === "closed" ? Effect.zipRight(record(`waiting:${workerId}`), Effect.never) : Effect.as(record("pack"), 1), Schema.Number)
      yield* ctx.step("ship", Effect.as(record("ship"), 1), Schema.Number)
      return `shipped to ${customer}`
    })
})

const workflows = [order]
const ports = Layer.mergeAll(SqliteStore.layer({ filename, busyTimeout: "30 seconds" }), ScriptedModel.layer([]), ToolRegistry.layer([charge]))
const live = Layer.provideMerge(Kernel.layer({ workflows }), ports)

const fiber = Effect.runFork(
  Worker.run({ workflows, concurrency: 2, leaseSeconds: 5, pollInterval: "50 millis", workerId }).pipe(Effect.provide(live))
)
process.on("SIGTERM", () => {
  Effect.runPromise(Fiber.interrupt(fiber)).then(() => process.exit(0), () => process.exit(1))
})
