// `Kernel.execute` of a run id: a new run is created by its RunStarted (no read first); an id whose run exists (the
// RunStarted refused at seq 0) continues that run, on a real SQLite file.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { EventStore, Kernel, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-execute-existing-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
let n = 0
const tempDb = () => path.join(root, `db-${n++}.db`)

const acme = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const globex = Tenant.TenantContext.make({ tenantId: "globex", capabilities: [], budgetUsdLimit: 1 })

let calls = 0
const count = Tool.make({
  name: "count",
  description: "Counts its calls",
  parameters: Schema.Struct({ i: Schema.Number }),
  idempotent: true,
  handler: () => Effect.sync(() => ++calls)
})

/** Two tool calls, then the input's word and the calls' count: a continued run returns its logged output. */
const counted = Workflow.make({
  name: "counted",
  // A finite number: `Infinity` is a number the schema takes but JSON cannot log.
  input: Schema.Struct({ word: Schema.String, n: Schema.Number }),
  output: Schema.String,
  run: ({ word }, ctx) =>
    Effect.gen(function*() {
      yield* ctx.tool(count, { i: 1 })
      const last = yield* ctx.tool(count, { i: 2 })
      return `${word} ${last}`
    })
})

const kernelOn = (filename: string) =>
  Effect.map(
    Layer.build(Layer.provideMerge(Kernel.layer(), Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer([]), ToolRegistry.layer([count])))),
    (context) => ({ kernel: Context.get(context, Kernel.Kernel), store: Context.get(context, EventStore.EventStore) })
  )

describe("Kernel.execute of a run id", () => {
  it.scoped("an existing run is continued (its logged output returned, no tool called again, nothing appended), whatever input is given", () =>
    Effect.gen(function*() {
      calls = 0
      const { kernel, store } = yield* kernelOn(tempDb())
      const first = yield* kernel.execute(counted, { runId: "r1", tenant: acme, input: { word: "first", n: 1 } })
      expect(first).toEqual({ status: "completed", runId: "r1", output: "first 2" })
      const head = (yield* store.getRun("acme", "r1")).headSeq
      const again = yield* kernel.execute(counted, { runId: "r1", tenant: acme, input: { word: "second", n: 2 } })
      expect(again).toEqual(first)
      // An input the workflow cannot log does not matter to a run that exists: its logged input is the one.
      const unloggable = yield* kernel.execute(counted, { runId: "r1", tenant: acme, input: { word: "third", n: Number.NaN } })
      expect(unloggable).toEqual(first)
      expect(calls).toBe(2)
      expect((yield* store.getRun("acme", "r1")).headSeq).toBe(head)
      // A new run with that input is refused for it (nothing is created).
      const refused = yield* Effect.flip(kernel.execute(counted, { runId: "r2", tenant: acme, input: { word: "third", n: Number.NaN } }))
      expect(refused._tag).toBe("InvalidInput")
      expect((yield* Effect.flip(store.getRun("acme", "r2")))._tag).toBe("RunNotFound")
    }))

  it.scoped("the same run id in another tenant is a new run of that tenant, not the other tenant's run", () =>
    Effect.gen(function*() {
      calls = 0
      const { kernel, store } = yield* kernelOn(tempDb())
      yield* kernel.execute(counted, { runId: "shared", tenant: acme, input: { word: "acme", n: 1 } })
      const other = yield* kernel.execute(counted, { runId: "shared", tenant: globex, input: { word: "globex", n: 1 } })
      expect(other).toEqual({ status: "completed", runId: "shared", output: "globex 4" })
      expect(calls).toBe(4)
      expect((yield* store.readEvents("acme", "shared")).length).toBe((yield* store.readEvents("globex", "shared")).length)
    }))
})
