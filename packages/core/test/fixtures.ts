import { Effect, Layer, Schema } from "effect"
import { EventStore, Kernel, Middleware, Tenant, Tool, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["finance:read"], budgetUsdLimit: 1 })

/** Counts handler executions per idempotency key. */
export const makeCounter = () => {
  const calls: Array<string> = []
  return { calls, count: () => calls.length }
}

export const makeTools = (counter = makeCounter()) => {
  const getBalance = Tool.make({
    name: "get_balance",
    description: "Balance of an account in USD",
    parameters: Schema.Struct({ accountId: Schema.String.pipe(Schema.minLength(3)) }),
    success: Schema.Struct({ accountId: Schema.String, balance: Schema.Number }),
    requiresCapability: "finance:read",
    idempotent: true,
    handler: ({ accountId }, ctx) =>
      Effect.sync(() => {
        counter.calls.push(`get_balance:${ctx.idempotencyKey}`)
        return { accountId, balance: 1200 }
      })
  })
  const transfer = Tool.make({
    name: "transfer",
    description: "Moves money between accounts",
    parameters: Schema.Struct({ from: Schema.String, to: Schema.String, amount: Schema.Number }),
    requiresCapability: "finance:write",
    handler: (args) => Effect.sync(() => {
      counter.calls.push("transfer")
      return { ok: true, ...args }
    })
  })
  const notify = Tool.make({
    name: "notify",
    description: "Sends a notification (not idempotent)",
    parameters: Schema.Struct({ text: Schema.String }),
    handler: ({ text }) => Effect.sync(() => {
      counter.calls.push(`notify:${text}`)
      return "sent"
    })
  })
  return { counter, getBalance, transfer, notify, all: [getBalance, transfer, notify] }
}

export const kernelLayer = (
  script: ReadonlyArray<ScriptedModel.Reply>,
  tools: ReadonlyArray<Tool.Tool>,
  options: { readonly store?: Layer.Layer<EventStore.EventStore>; readonly middleware?: ReadonlyArray<Middleware.Interceptor>; readonly kernel?: Kernel.Options } = {}
) => {
  const base = Layer.mergeAll(
    options.store ?? EventStore.layerMemory,
    ScriptedModel.layer(script),
    ToolRegistry.layer(tools),
    Middleware.layer(options.middleware ?? [])
  )
  return Layer.provideMerge(Kernel.layer(options.kernel), base)
}
