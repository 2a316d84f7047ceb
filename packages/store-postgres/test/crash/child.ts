// One process of the crash test (see ../crash.test.ts): `node --import tsx child.ts URL DIR DURABILITY [CRASH_AT]`.
// Runs the run "order-1" of a workflow of a memoized step and two calls of an idempotent tool on PostgreSQL, with
// the kernel's `idempotentToolDurability` DURABILITY. At the crash point CRASH_AT (`record:<line>:after-effect`: in
// the handler, after its side effect) the process SIGKILLs itself; otherwise it prints the run's result as one JSON line.
// Files in DIR: `attempts.log` (one line per handler call: `attempt <idempotency key>`), `effects.log` (one line per
// side effect: the handler skips a key it has written), `steps.log` (one line per run of the memoized step's effect).
import { appendFileSync, existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { Kernel, Middleware, ModelPort, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { PostgresStore } from "../../src/index.js"

const [url = "", dir = "", durability = "two-phase", crashAt] = process.argv.slice(2)
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const file = (name: string) => join(dir, name)
const linesOf = (name: string) => (existsSync(file(name)) ? readFileSync(file(name), "utf8").split("\n") : [])

const crashPoint = (label: string) =>
  Effect.suspend(() => {
    if (label !== crashAt) return Effect.void
    process.kill(process.pid, "SIGKILL")
    return Effect.never
  })

const record = Tool.make({
  name: "record",
  description: "Records a line in the ledger once per idempotency key",
  parameters: Schema.Struct({ line: Schema.String }),
  success: Schema.Struct({ key: Schema.String, fresh: Schema.Boolean }),
  idempotent: true,
  handler: ({ line }, ctx) =>
    Effect.gen(function*() {
      appendFileSync(file("attempts.log"), `attempt ${ctx.idempotencyKey}\n`)
      const entry = `record ${ctx.idempotencyKey}`
      const fresh = !linesOf("effects.log").includes(entry)
      if (fresh) appendFileSync(file("effects.log"), `${entry}\n`)
      yield* crashPoint(`record:${line}:after-effect`)
      return { key: ctx.idempotencyKey, fresh }
    })
})

export const Output = Schema.Struct({
  prepared: Schema.Number,
  first: Schema.Struct({ key: Schema.String, fresh: Schema.Boolean }),
  second: Schema.Struct({ key: Schema.String, fresh: Schema.Boolean })
})

const workflow = Workflow.make({
  name: "pg.crashy",
  input: Schema.Struct({ order: Schema.String }),
  output: Output,
  run: (_input, ctx) =>
    Effect.gen(function*() {
      const prepared = yield* ctx.step("prepare", Effect.sync(() => (appendFileSync(file("steps.log"), "step prepare\n"), 41)), Schema.Number)
      const first = yield* ctx.tool(record, { line: "first" })
      const second = yield* ctx.tool(record, { line: "second" })
      return { prepared, first, second }
    })
})

const noModel = ModelPort.make({ defaultModel: "none", generate: () => Effect.dieMessage("this workflow calls no model") })

const layer = Layer.provideMerge(
  Kernel.layer({ workflows: [workflow], idempotentToolDurability: durability === "one-commit" ? "one-commit" : "two-phase" }),
  Layer.mergeAll(PostgresStore.layer({ url, pool: { max: 2 } }), Layer.succeed(ModelPort.ModelPort, noModel), ToolRegistry.layer([record]), Middleware.layer([]))
)

const program = Effect.flatMap(Kernel.Kernel, (k) => k.execute(workflow, { runId: "order-1", tenant, input: { order: "o-1" } }))

Effect.runPromise(Effect.provide(program, layer)).then(
  (result) => console.log(JSON.stringify(result)),
  (error: unknown) => {
    console.log(JSON.stringify({ failed: String(error) }))
    process.exitCode = 1
  }
)
