import { Duration, Effect, Layer, Schema } from "effect"
import { type EventStore, Kernel, type TaskQueue, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { ArtanaSession } from "@artana/worker"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["billing"], budgetUsdLimit: 1 })

/** Made on first use, so a test file that imports these helpers for something else leaves no empty directory. */
let root: string | undefined
const rootDir = (): string => (root ??= fs.mkdtempSync(path.join(os.tmpdir(), "artana-worker-")))
export const cleanup = () => {
  if (root !== undefined) fs.rmSync(root, { recursive: true, force: true })
  root = undefined
}
/** A fresh database file in its own directory. */
export const tempDb = () => path.join(fs.mkdtempSync(path.join(rootDir(), "db-")), "artana.db")
export const tempDir = () => fs.mkdtempSync(path.join(rootDir(), "dir-"))

/** Counts every side effect, by name, so a test can say each happened once. */
export const makeEffects = () => {
  const counts = new Map<string, number>()
  const hit = (name: string): number => {
    const n = (counts.get(name) ?? 0) + 1
    counts.set(name, n)
    return n
  }
  return { counts, hit, of: (name: string) => counts.get(name) ?? 0 }
}

/** A gate a workflow step waits on: closed until `open`; `waiting` tells that a step reached it. */
export const makeGate = () => {
  let open = false
  let waiting = false
  const listeners: Array<() => void> = []
  return {
    wait: Effect.async<void>((resume) => {
      waiting = true
      if (open) return resume(Effect.void)
      listeners.push(() => resume(Effect.void))
    }),
    open: () => {
      open = true
      for (const l of listeners.splice(0)) l()
    },
    isWaiting: () => waiting
  }
}

export const makeWorld = () => {
  const effects = makeEffects()
  const gate = makeGate()
  const charge = Tool.make({
    name: "charge",
    description: "Charges a customer (idempotent by key)",
    parameters: Schema.Struct({ customer: Schema.String, cents: Schema.Number }),
    requiresCapability: "billing",
    idempotent: true,
    handler: ({ customer }, ctx) => Effect.sync(() => {
      effects.hit(`charge:${customer}:${ctx.idempotencyKey}`)
      return { charged: true }
    })
  })

  const greet = Workflow.make({
    name: "greet",
    input: Schema.Struct({ name: Schema.String }),
    output: Schema.Struct({ greeting: Schema.String }),
    run: ({ name }, ctx) =>
      Effect.map(ctx.step("compose", Effect.sync(() => {
        effects.hit(`greet:${name}`)
        return `hello ${name}`
      }), Schema.String), (greeting) => ({ greeting }))
  })

  const approve = Workflow.make({
    name: "approve",
    input: Schema.Struct({ amount: Schema.Number }),
    output: Schema.String,
    run: ({ amount }, ctx) =>
      Effect.gen(function*() {
        yield* ctx.step("prepare", Effect.sync(() => effects.hit("approve:prepare")), Schema.Number)
        const decision = yield* ctx.pauseForHuman({ reason: `approve ${amount}`, schema: Schema.Struct({ approved: Schema.Boolean }) })
        yield* ctx.step("apply", Effect.sync(() => effects.hit(`approve:apply:${decision.approved}`)), Schema.Number)
        return decision.approved ? "approved" : "rejected"
      })
  })

  /** Bills, then waits at the gate, then ships: the place to crash a worker mid-run. */
  const order = Workflow.make({
    name: "order",
    input: Schema.Struct({ customer: Schema.String }),
    output: Schema.String,
    run: ({ customer }, ctx) =>
      Effect.gen(function*() {
        yield* ctx.tool(charge, { customer, cents: 500 })
        yield* ctx.step("reserve", Effect.sync(() => effects.hit("order:reserve")), Schema.Number)
        yield* ctx.step("pack", Effect.zipRight(gate.wait, Effect.sync(() => effects.hit("order:pack"))), Schema.Number)
        yield* ctx.step("ship", Effect.sync(() => effects.hit("order:ship")), Schema.Number)
        return `shipped to ${customer}`
      })
  })

  const stuck = Workflow.make({
    name: "stuck",
    input: Schema.Null,
    output: Schema.Null,
    run: () => Effect.as(Effect.never, null)
  })

  const boom = Workflow.make({
    name: "boom",
    input: Schema.Null,
    output: Schema.Null,
    run: () => Effect.fail(new Error("the ledger is closed"))
  })

  const workflows: ReadonlyArray<Workflow.Any> = [greet, approve, order, stuck, boom]
  return { effects, gate, charge, greet, approve, order, stuck, boom, workflows }
}

export type World = ReturnType<typeof makeWorld>

/** Kernel (with the world's workflows and tools), session, and the store's event log and queue. */
export const layer = (
  world: World,
  store: Layer.Layer<EventStore.EventStore | TaskQueue.TaskQueue, unknown>
): Layer.Layer<ArtanaSession.ArtanaSession | Kernel.Kernel | EventStore.EventStore | TaskQueue.TaskQueue> => {
  const ports = Layer.mergeAll(Layer.orDie(store), ScriptedModel.layer([]), ToolRegistry.layer([world.charge]))
  const kernel = Layer.provideMerge(Kernel.layer({ workflows: world.workflows }), ports)
  return Layer.provideMerge(ArtanaSession.layer, kernel)
}

/** Polls `check` every 20 ms until it holds; fails the test (a defect naming `what`) after `seconds`. */
export const eventually = (what: string, seconds: number, check: () => boolean | Effect.Effect<boolean, unknown>) =>
  Effect.gen(function*() {
    const deadline = Date.now() + seconds * 1000
    while (Date.now() < deadline) {
      const result = check()
      if (typeof result === "boolean" ? result : yield* result) return
      yield* Effect.sleep(Duration.millis(20))
    }
    return yield* Effect.dieMessage(`timed out after ${seconds}s waiting until ${what}`)
  })
