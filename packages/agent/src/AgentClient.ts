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
import { type Approval, Artana, type EventStore, type Kernel, type Tenant } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import type { Agent, AgentOutput, RunOptions } from "./AutonomousAgent.js"
import { layerMemory, type MemoryStore } from "./MemoryStore.js"
import * as SubAgent from "./SubAgent.js"

/** `Artana.Options` (the same names: model, tools, middleware, auditKey, prices, ...), and the agents' memory. */
export interface Options<S> extends Artana.Options {
  /**
   * Where the log lives (and what it provides: a `SqlClient` for `SqlMemoryStore`), e.g. `SqliteStore.layer(...)`,
   * or `EventStore.layerMemory`.
   */
  readonly store: Layer.Layer<EventStore.EventStore | S, unknown>
  /** The agents' memory, built on what the store provides; in memory when absent. */
  readonly memory?: Layer.Layer<MemoryStore, unknown, S> | undefined
}

export interface Client {
  /** `agent.run`: runs the agent on a task, or continues the run `runId`. The tenant may be plain data (`Tenant.Input`). */
  readonly run: <A = string, I = string>(
    agent: Agent,
    options: Omit<RunOptions<A, I>, "tenant"> & { readonly tenant: Tenant.TenantContext | Tenant.Input }
  ) => Promise<Kernel.RunResult<AgentOutput<A>>>
  /** `agent.replay`: re-runs a run over its log, executing nothing. */
  readonly replay: <A = string, I = string>(
    agent: Agent,
    options: { readonly tenantId: string; readonly runId: string; readonly outputSchema?: Schema.Schema<A, I> | undefined }
  ) => Promise<Kernel.RunResult<AgentOutput<A>>>
  /** `Artana.approvals`: the tenant's tool calls waiting for approval (an agent's tool with `needsApproval`). */
  readonly approvals: (filter: Approval.ApprovalsFilter) => Promise<ReadonlyArray<Approval.PendingApproval>>
  /**
   * `Artana.decide`: approves (optionally with edited arguments; pass the tool as `tool`, an agent's tools being values
   * the kernel's registry does not hold) or rejects a pending call. `run` with the run's id then continues the agent
   * with the decision.
   */
  readonly decide: (decision: Approval.DecideRequest) => Promise<Approval.Decided>
  /** `SubAgent.lineage`: the tree of runs `runId` belongs to. */
  readonly lineage: (run: Kernel.RunRef) => Promise<SubAgent.RunTree>
  /** Releases the store (closes the database). */
  readonly close: () => Promise<void>
}

/**
 * Builds a client over `Artana.layer(options)` and the memory store. Errors reject with the typed errors of the agent
 * and the kernel (`error._tag` tells which).
 */
export const create = <S = never>(options: Options<S>): Client => {
  const given: Layer.Layer<MemoryStore, unknown, S> = options.memory ?? layerMemory
  // The same store layer value twice: Effect builds it once, and the memory shares its database. The memory is one of
  // the kernel's services too, so an agent's workflow value (`agent.workflow`) resumed by name finds it.
  const memory = given.pipe(Layer.provide(options.store))
  const layer = Artana.layer({ ...options, services: [...(options.services ?? []), memory] })
  const { run, close } = Artana.runner(Layer.merge(layer, memory))
  return {
    run: (agent, o) => run(Effect.flatMap(Artana.tenant(o.tenant), (tenant) => agent.run({ ...o, tenant }))),
    replay: (agent, o) => run(agent.replay(o)),
    approvals: (filter) => run(Artana.approvals(filter)),
    decide: (decision) => run(Artana.decide(decision)),
    lineage: (r) => run(SubAgent.lineage(r)),
    close
  }
}
