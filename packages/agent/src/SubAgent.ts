/**
 * Sub-agents: an agent offered to another agent as a tool. A call runs the child agent as a run of its own,
 * through the same kernel (so the same store and the same middleware), with the id
 * `<parent run>::sub_agent::<idempotency key of the call>`, the parent's tenant, and the parent as its parent run,
 * so it spends on the root run's budget: a child that exhausts it stops, and the parent stops at its next model
 * step. The tool is idempotent: a parent that crashed during the call runs it again with the same key, which
 * resumes the same child run from its log (its completed tool calls are not repeated). A child that waits for
 * reconciliation makes the parent wait too (core's `Errors.WaitingOnRun`): once the step in doubt is settled, resuming
 * the root runs the call again, which continues the child and hands the parent its real output.
 *
 * `lineage` reads the tree of runs (root, sub-agents, their sub-agents) back from the store, a page of rows at most;
 * `lineagePage` pages the runs of a lineage too large for one.
 *
 * @since 0.1.0
 */
import { EventStore } from "@artana/core"
import type { Errors, Event } from "@artana/core"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type { Agent } from "./AutonomousAgent.js"

/** An agent as a tool; `AutonomousAgent` turns it into a kernel tool when the parent runs. */
export interface SubAgentTool {
  readonly _tag: "SubAgentTool"
  readonly name: string
  readonly description: string
  readonly agent: Agent
  /** The child's model; default the child agent's own, else the parent run's. */
  readonly model: string | undefined
  /** The child's output schema; its encoded output is the tool's result. Default: the child's answer text. */
  readonly outputSchema: Schema.Schema.AnyNoContext | undefined
}

/**
 * Offers `agent` to a parent agent as the tool `name`, taking `{ task: string }`.
 *
 * @example
 * const analyst = AutonomousAgent.make({
 *   name: "analyst",
 *   instructions: "...",
 *   tools: [SubAgent.asTool({ name: "research", description: "Researches a question on the web", agent: researcher })]
 * })
 */
export const asTool = (options: {
  readonly name: string
  readonly description: string
  readonly agent: Agent
  readonly model?: string | undefined
  readonly outputSchema?: Schema.Schema.AnyNoContext | undefined
}): SubAgentTool => ({
  _tag: "SubAgentTool",
  name: options.name,
  description: options.description,
  agent: options.agent,
  model: options.model,
  outputSchema: options.outputSchema
})

/** The run id of the child a call starts: `<parent>::sub_agent::<idempotencyKey>`. */
export const childRunId = (parentRunId: string, idempotencyKey: string): string => `${parentRunId}::sub_agent::${idempotencyKey}`

/** A run and the runs it started, recursively. */
export interface RunTree {
  readonly run: Event.RunInfo
  readonly children: ReadonlyArray<RunTree>
}

/** A lineage's tree as `lineage` reads it: `next` when the lineage has more runs than it read (see `lineage`). */
export interface LineageTree extends RunTree {
  /** The cursor of the lineage's runs left out of the tree, for `lineagePage({ after: next })`; absent when none. */
  readonly next?: string | undefined
}

/**
 * The tree `runId` belongs to, from its root: the runs of the lineage, children in the order they started. A lineage
 * of at most `limit` runs (default `EventStore.LINEAGE_SAMPLE`, 1,000) is read whole; a larger one (a long
 * continue-as-new chain, a fan-out of sub-agents) is drawn from its newest `limit` runs and the path from `runId` up
 * to the root, and `next` pages the rest with `lineagePage`: memory holds a page of run rows, however large the
 * lineage.
 *
 * @example
 * const tree = yield* SubAgent.lineage({ tenantId: "acme", runId: "report-7::sub_agent::report-7/turn:2/tool:0" })
 * // tree.run.runId === "report-7", tree.children[0].run.runId === "report-7::sub_agent::..."
 */
export const lineage = (
  run: { readonly tenantId: string; readonly runId: string },
  options: { readonly limit?: number | undefined } = {}
): Effect.Effect<LineageTree, Errors.RunNotFound | Errors.StoreError, EventStore.EventStore> =>
  Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const info = yield* store.getRun(run.tenantId, run.runId)
    const root = info.rootRunId === info.runId ? info : yield* store.getRun(run.tenantId, info.rootRunId)
    const { runs, next } = yield* EventStore.lineageSample(store, info, options)
    const byParent = new Map<string, Array<Event.RunInfo>>()
    for (const r of [...runs].sort((a, b) => a.createdAt - b.createdAt)) {
      if (r.parentRunId === undefined) continue
      const siblings = byParent.get(r.parentRunId) ?? []
      siblings.push(r)
      byParent.set(r.parentRunId, siblings)
    }
    // The depth bound guards against a corrupt row naming its own descendant as parent.
    const tree = (r: Event.RunInfo, depth: number): RunTree => ({ run: r, children: depth > 64 ? [] : (byParent.get(r.runId) ?? []).map((c) => tree(c, depth + 1)) })
    return next === undefined ? tree(root, 0) : { ...tree(root, 0), next }
  })

/**
 * The runs of `runId`'s lineage a page at a time, newest first (`EventStore.listRunsPage` on the root): at most
 * `limit` (default 1,000) after the cursor `after` (a `next` of `lineage` or of the page before), and the next cursor.
 */
export const lineagePage = (
  run: { readonly tenantId: string; readonly runId: string },
  options: { readonly after?: string | undefined; readonly limit?: number | undefined } = {}
): Effect.Effect<EventStore.RunsPage, Errors.RunNotFound | Errors.StoreError | Errors.InvalidInput, EventStore.EventStore> =>
  Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const info = yield* store.getRun(run.tenantId, run.runId)
    return yield* store.listRunsPage(run.tenantId, { rootRunId: info.rootRunId, after: options.after, limit: options.limit ?? EventStore.LINEAGE_SAMPLE })
  })

/** The tree as indented lines: `runId  workflow  status  $cost`, children indented under their parent. */
export const formatTree = (tree: RunTree): string => {
  const lines: Array<string> = []
  const walk = (t: RunTree, depth: number) => {
    lines.push(`${"  ".repeat(depth)}${depth === 0 ? "" : "└ "}${t.run.runId}  ${t.run.workflow}  ${t.run.status}  $${t.run.costUsd.toFixed(6)}`)
    for (const c of t.children) walk(c, depth + 1)
  }
  walk(tree, 0)
  return lines.join("\n")
}
