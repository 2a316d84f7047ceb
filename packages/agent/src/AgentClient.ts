/**
 * A Promise facade for code that does not use Effect. It holds no logic of its own: each method runs the agent's
 * own Effect operation on a runtime built from the same layers an Effect user would provide.
 *
 * ```ts
 * const client = AgentClient.create({
 *   store: SqliteStore.layer({ filename: "artana.db" }),
 *   memory: SqlMemoryStore.layer(),          // memory in the same database (default: in memory)
 *   model: OpenAiModel.layerConfig()
 * })
 * const result = await client.run(analyst, { tenant, prompt: "How did EMEA grow?" })
 * await client.close()
 * ```
 *
 * @since 0.1.0
 */
import { type EventStore, Kernel, Middleware, type ModelPort, type Pricing, ToolRegistry } from "@artana/core"
import type { Tool } from "@artana/core"
import * as Cause from "effect/Cause"
import type * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import type * as Schema from "effect/Schema"
import type { Agent, AgentOutput, RunOptions } from "./AutonomousAgent.js"
import { layerMemory, type MemoryStore } from "./MemoryStore.js"
import * as SubAgent from "./SubAgent.js"

export interface Options<S> {
  /**
   * Where the log lives (and what it provides: a `SqlClient` for `SqlMemoryStore`), e.g. `SqliteStore.layer(...)`,
   * or `EventStore.layerMemory`.
   */
  readonly store: Layer.Layer<EventStore.EventStore | S, unknown>
  /** The agents' memory, built on what the store provides; in memory when absent. */
  readonly memory?: Layer.Layer<MemoryStore, unknown, S> | undefined
  readonly model: Layer.Layer<ModelPort.ModelPort, unknown>
  /** Tools the kernel calls by name besides the agents' own (rarely needed: agents pass theirs by value). */
  readonly tools?: ReadonlyArray<Tool.Tool> | undefined
  /** The middleware chain, in order; an entry may be an Effect that needs the ModelPort (a quota). */
  readonly middleware?: ReadonlyArray<Middleware.Interceptor | Effect.Effect<Middleware.Interceptor, never, ModelPort.ModelPort>> | undefined
  readonly auditKey?: string | undefined
  /** Prices for models the built-in table does not know (a local model: `{ "llama3.2": Pricing.free }`), as `Kernel.Options`. */
  readonly prices?: Pricing.PriceTable | undefined
  readonly unknownModelPrice?: Pricing.Price | undefined
  /** `false` turns the budget off, visibly (see `Kernel.Options.enforceBudget`). */
  readonly enforceBudget?: boolean | undefined
}

export interface Client {
  /** `agent.run`: runs the agent on a task, or continues the run `runId`. */
  readonly run: <A = string, I = string>(agent: Agent, options: RunOptions<A, I>) => Promise<Kernel.RunResult<AgentOutput<A>>>
  /** `agent.replay`: re-runs a run over its log, executing nothing. */
  readonly replay: <A = string, I = string>(
    agent: Agent,
    options: { readonly tenantId: string; readonly runId: string; readonly outputSchema?: Schema.Schema<A, I> | undefined }
  ) => Promise<Kernel.RunResult<AgentOutput<A>>>
  /** `SubAgent.lineage`: the tree of runs `runId` belongs to. */
  readonly lineage: (run: Kernel.RunRef) => Promise<SubAgent.RunTree>
  /** Releases the store (closes the database). */
  readonly close: () => Promise<void>
}

/** Builds a client. Errors reject with the typed errors of the agent and the kernel (`error._tag` tells which). */
export const create = <S = never>(options: Options<S>): Client => {
  const store = options.store
  const services = Layer.mergeAll(
    options.model,
    ToolRegistry.layer(options.tools ?? []),
    // The same model layer object twice: Effect builds it once and shares it.
    Middleware.layer(options.middleware ?? []).pipe(Layer.provide(options.model))
  )
  const memory: Layer.Layer<MemoryStore, unknown, S> = options.memory ?? layerMemory
  const kernel = Kernel.layer({
    auditKey: options.auditKey === undefined ? undefined : Redacted.make(options.auditKey),
    prices: options.prices,
    unknownModelPrice: options.unknownModelPrice,
    enforceBudget: options.enforceBudget
  })
  const runtime = ManagedRuntime.make(
    Layer.provideMerge(kernel, services).pipe(Layer.provideMerge(memory), Layer.provideMerge(store))
  )
  const run = <A, E>(effect: Effect.Effect<A, E, Kernel.Kernel | ModelPort.ModelPort | MemoryStore | EventStore.EventStore>): Promise<A> =>
    runtime.runPromiseExit(effect).then((exit) => (Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause))))
  return {
    run: (agent, o) => run(agent.run(o)),
    replay: (agent, o) => run(agent.replay(o)),
    lineage: (r) => run(SubAgent.lineage(r)),
    close: () => runtime.dispose()
  }
}
