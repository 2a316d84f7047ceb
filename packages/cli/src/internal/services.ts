/**
 * The kernel a command runs: the store from `--db`, the tools and policy middleware, a model port that refuses
 * every call (plans call no model), and the plan workflow registered by name.
 */
import type { EventStore} from "@artana/core";
import { Errors, Kernel, Middleware, ModelPort, Tenant, type Tool, ToolRegistry, type Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"

/** Plans call no model: a model call is refused with a clear error rather than reaching a provider. */
export const noModel: Layer.Layer<ModelPort.ModelPort> = ModelPort.layer({
  defaultModel: "none",
  generate: () => Effect.fail(new Errors.ModelError({ kind: "bad_request", reason: "the artana CLI runs plans of tool steps and has no model", retryable: false }))
})

export interface KernelOptions<E> {
  /** The event store (`Database.layer`, or one already opened). */
  readonly store: Layer.Layer<EventStore.EventStore, E>
  readonly tools?: ReadonlyArray<Tool.Tool> | undefined
  readonly middleware?: ReadonlyArray<Middleware.Interceptor> | undefined
  readonly workflows?: ReadonlyArray<Workflow.Any> | undefined
  readonly auditKey?: Redacted.Redacted<string> | undefined
}

export type Services = Kernel.Kernel | EventStore.EventStore | ToolRegistry.ToolRegistry

export const kernel = <E>(options: KernelOptions<E>): Layer.Layer<Services, E> =>
  Layer.provideMerge(
    Kernel.layer({ workflows: options.workflows, auditKey: options.auditKey }),
    Layer.mergeAll(
      options.store,
      noModel,
      ToolRegistry.layer(options.tools ?? []),
      Middleware.layer(options.middleware ?? [])
    )
  )

/**
 * The CLI's tenant: the id given (`--tenant`), holding the capabilities the tools require (the policy, not the
 * tenant, decides what a plan may do), with no model budget (a plan calls no model).
 */
export const tenant = (tenantId: string, tools: ReadonlyArray<Tool.Tool>): Either.Either<Tenant.TenantContext, Errors.InvalidInput> => {
  const capabilities = [...new Set(tools.flatMap((t) => (t.requiresCapability === undefined ? [] : [t.requiresCapability])))].sort()
  return Either.mapLeft(
    Schema.decodeUnknownEither(Tenant.TenantContext)({ tenantId, capabilities, budgetUsdLimit: 0 }),
    () => new Errors.InvalidInput({ what: "tenant", reason: `"${tenantId}" is not a tenant id (it must be a non-empty string without surrounding spaces)` })
  )
}

/** A tool whose handler must never run: a replay takes every result from the log. */
export const replayOnly = (tool: Tool.Tool): Tool.Tool => ({
  ...tool,
  invoke: () => Effect.die(new Error(`tool ${tool.name} was invoked during a replay; a replay must take every result from the log`))
})
