/**
 * A test kit for plugin authors: runs a plugin's tool through a real kernel (in-memory event store, the plugin's
 * middleware, a scripted model that must not be called) in one call, and returns the result with the run's log.
 *
 * @example
 * import { PluginTest } from "@artana/plugin-sdk/testing"
 * const { result, events } = await PluginTest.runPromise({ plugin, config: { units: "metric" }, tool: "weather.forecast", args: { city: "Oslo" } })
 *
 * @since 0.1.0
 */
import { Artana, type Errors, type Event, EventStore, type Json, Kernel, type Middleware, type ModelPort, Tenant, type ToolRegistry, type Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { load, type Loaded, type Plugin } from "./Plugin.js"
import type { PluginError } from "./PluginErrors.js"
import * as Plugins from "./Plugins.js"

/** The tenant tool calls run as by default: every capability the plugin declares, a 1 USD budget. */
export const tenantFor = (plugin: { readonly capabilities: ReadonlyArray<string> }, capabilities?: ReadonlyArray<string>) =>
  Tenant.TenantContext.make({ tenantId: "plugin-test", capabilities: [...(capabilities ?? plugin.capabilities)], budgetUsdLimit: 1 })

export interface RunOptions<C, CI> {
  readonly plugin: Plugin<C, CI>
  /** The config, as a host would give it (before decoding). */
  readonly config: CI | unknown
  readonly tool: string
  readonly args: Json.Json
  /**
   * Default: a tenant holding every capability the plugin declares. A `TenantContext` or plain data
   * (`{ tenantId, capabilities, budgetUsdLimit }`), as everywhere else; a bad one fails `InvalidTenant`.
   */
  readonly tenant?: Tenant.TenantContext | Tenant.Input | undefined
  readonly runId?: string | undefined
}

export interface RunResult {
  readonly runId: string
  /** The tool's result, or why the call failed (invalid arguments, a policy denial, the handler's error). */
  readonly result: Either.Either<Json.Json, Workflow.ToolCallError | Kernel.KernelError>
  /** The run's log, in order. */
  readonly events: ReadonlyArray<Event.Event>
}

/** The kernel for a loaded plugin: in-memory store, the plugin's tools and middleware, a model that must stay silent. */
export const layer = (
  loaded: ReadonlyArray<Loaded>
): Layer.Layer<Kernel.Kernel | EventStore.EventStore | ModelPort.ModelPort | ToolRegistry.ToolRegistry | Middleware.Middleware | ScriptedModel.ScriptedModel> =>
  Layer.provideMerge(Kernel.layer(), Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([]), Plugins.layer(loaded)))

/** Loads the plugin with `config` and calls one of its tools through a real kernel. */
export const run = <C, CI>(options: RunOptions<C, CI>): Effect.Effect<RunResult, PluginError | Errors.InvalidTenant> =>
  Effect.gen(function*() {
    const loaded = yield* load(options.plugin, options.config)
    const tenant = options.tenant === undefined ? tenantFor(options.plugin) : yield* Artana.tenant(options.tenant)
    const runId = options.runId ?? `plugin-test-${crypto.randomUUID()}`
    return yield* Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const store = yield* EventStore.EventStore
      const outcome = yield* Effect.either(kernel.callTool({ runId, tenant, tool: options.tool, args: options.args }))
      // A fresh call of one tool completes or fails: it cannot pause, nor be in doubt.
      if (Either.isRight(outcome) && outcome.right.status !== "completed") return yield* Effect.dieMessage(`unexpected ${outcome.right.status}`)
      const result = Either.map(outcome, (r) => (r.status === "completed" ? r.output : null))
      const events = yield* Effect.orDie(store.readEvents(tenant.tenantId, runId))
      return { runId, result, events }
    }).pipe(Effect.provide(layer([loaded])))
  })

/** `run`, for tests that do not use Effect. A plugin error (or a bad tenant) rejects the promise. */
export const runPromise = <C, CI>(options: RunOptions<C, CI>): Promise<RunResult> => Effect.runPromise(run(options))
