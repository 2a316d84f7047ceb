// A host loads the template plugin by its package name (from this package's node_modules, as `pnpm add` puts it),
// and a model calls its tools through a kernel on a SQLite file.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Chat, EventStore, Kernel, Tenant } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Plugins } from "@artana/plugin-sdk"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const HERE = fileURLToPath(new URL("..", import.meta.url))

describe("the template plugin, loaded by package name", () => {
  it.scoped("its tools reach the model only for tenants with its capability, and run through the kernel", () =>
    Effect.gen(function*() {
      const fx = yield* Plugins.loadPackage("artana-plugin-template", { base: "EUR", rates: { USD: 1.08 } }, { from: HERE })
      expect(fx).toMatchObject({ name: "artana-plugin-template", capabilities: ["fx:read"] })
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "artana-plugin-host-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const context = yield* Layer.build(Layer.provideMerge(Kernel.layer(), Layer.mergeAll(
        SqliteStore.layer({ filename: path.join(dir, "artana.db") }),
        ScriptedModel.layer([
          ScriptedModel.toolCall("fx.convert", { amount: 50, from: "EUR", to: "USD" }, {
            expect: (r) => (r.tools.map((t) => t.name).sort().join() === "fx.convert,fx.rates" ? undefined : "the plugin's tools are offered")
          }),
          ScriptedModel.text("50 EUR is 54 USD"),
          ScriptedModel.text("I cannot convert currencies", { expect: (r) => (r.tools.length === 0 ? undefined : "no tool for a tenant without fx:read") })
        ]),
        Plugins.layer([fx])
      )))
      const kernel = yield* Effect.provide(Kernel.Kernel, context)
      const store = yield* Effect.provide(EventStore.EventStore, context)
      const trader = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["fx:read"], budgetUsdLimit: 1 })
      expect(yield* kernel.chat({ runId: "fx-1", tenant: trader, messages: [Chat.user("50 EUR in USD?")] })).toMatchObject({ output: { output: "50 EUR is 54 USD" } })
      const events = yield* store.readEvents("acme", "fx-1")
      expect(events.find((e) => e.payload._tag === "ToolCompleted")?.payload).toMatchObject({ result: { amount: 54, currency: "USD" } })
      const visitor = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
      expect(yield* kernel.chat({ runId: "fx-2", tenant: visitor, messages: [Chat.user("50 EUR in USD?")] })).toMatchObject({ status: "completed" })
    }))
})
