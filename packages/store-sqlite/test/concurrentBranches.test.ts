// Branches run concurrently under explicit keys (as the core README allows) on a real SQLite file.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer, Schema } from "effect"
import { EventStore, Kernel, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "artana-rev-branches-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const acme = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

const calls: Array<string> = []
const lookup = Tool.make({
  name: "lookup",
  description: "looks up",
  parameters: Schema.Struct({ i: Schema.Number }),
  idempotent: true,
  handler: ({ i }, ctx) => Effect.sync(() => (calls.push(ctx.idempotencyKey), i * 10))
})

const fanOut = Workflow.make({
  name: "fan-out-sqlite",
  input: Schema.Null,
  output: Schema.Unknown,
  run: (_i, ctx) =>
    Effect.all([0, 1, 2, 3].map((i) => ctx.tool(lookup, { i }, { key: `lookup-${i}` })), { concurrency: "unbounded" })
})

const sent: Array<string> = []
const email = Tool.make({
  name: "email",
  description: "sends an email (not idempotent)",
  parameters: Schema.Struct({ to: Schema.String }),
  handler: ({ to }) => Effect.sync(() => (sent.push(to), "sent"))
})

const twoEmails = Workflow.make({
  name: "two-emails",
  input: Schema.Null,
  output: Schema.Unknown,
  run: (_i, ctx) =>
    Effect.all(["ann", "bob", "cy", "dee"].map((to) => ctx.tool(email, { to }, { key: `to-${to}` })), { concurrency: "unbounded" })
})

const kernelOn = (filename: string) =>
  Effect.map(
    Layer.build(Layer.provideMerge(Kernel.layer(), Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer([]), ToolRegistry.layer([lookup, email])))),
    (context) => ({ kernel: Context.get(context, Kernel.Kernel), store: Context.get(context, EventStore.EventStore) })
  )

describe("concurrent branches of one run on SQLite", () => {
  it.scoped("four tool calls under explicit keys, run concurrently: the run completes", () =>
    Effect.gen(function*() {
      const { kernel } = yield* kernelOn(path.join(root, "a.db"))
      const result = yield* Effect.either(kernel.execute(fanOut, { runId: "fan", tenant: acme, input: null }))
      expect(Either.isRight(result) ? result.right : `${result.left._tag}: ${result.left.message}`).toEqual({ status: "completed", runId: "fan", output: [0, 10, 20, 30] })
    }))

  it.scoped("four non-idempotent calls run concurrently: no call is left in doubt by the run's own appends", () =>
    Effect.gen(function*() {
      const { kernel } = yield* kernelOn(path.join(root, "b.db"))
      const first = yield* Effect.either(kernel.execute(twoEmails, { runId: "mail", tenant: acme, input: null }))
      const show = (r: typeof first) => (Either.isRight(r) ? r.right : `${r.left._tag}: ${r.left.message}`)
      const again = yield* Effect.either(kernel.execute(twoEmails, { runId: "mail", tenant: acme, input: null }))
      expect({ first: show(first), again: show(again), sent: [...sent].sort() }).toEqual({
        first: { status: "completed", runId: "mail", output: ["sent", "sent", "sent", "sent"] },
        again: { status: "completed", runId: "mail", output: ["sent", "sent", "sent", "sent"] },
        sent: ["ann", "bob", "cy", "dee"]
      })
    }))
})
