/**
 * `AutonomousAgent`: a model that works a task with tools until its answer decodes, as a durable run. Every turn
 * rebuilds the context (`ContextBuilder`: memory, identity, sections, skills, the compacted history), takes one
 * model step, and runs the tool calls it asked for — each a kernel step, so a crashed agent resumes mid-loop from
 * its log without repeating a tool call, and a replay is exact. The loop is bounded by `maxTurns` and the tenant's
 * budget.
 *
 * @example
 * const analyst = AutonomousAgent.make({
 *   name: "analyst",
 *   instructions: "You analyse sales data and answer with a short report.",
 *   tools: [querySales, Skills.make(chart, { instructions: "..." })],
 *   progressiveSkills: true,
 *   compaction: CompactionStrategy.make({ triggerAtTokenRatio: 0.7, summarizeWithModel: "gpt-4o-mini", keepRecentMessages: 8 })
 * })
 * const result = yield* analyst.run({ runId: "q3", tenant, prompt: "How did Q3 go?", outputSchema: Report })
 *
 * @since 0.1.0
 */
import { Kernel, ModelPort } from "@artana/core"
import type { Chat, Errors, Tenant, Tool, Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type { ContextOverflow, ExtensionError, ServiceMissing } from "./AgentErrors.js"
import type { ContextBuilder, ContextSection } from "./ContextBuilder.js"
import type { CompactionStrategy } from "./CompactionStrategy.js"
import type { Extension } from "./Extension.js"
import { validate } from "./internal/definition.js"
import * as internal from "./internal/schemas.js"
import { workflowOf } from "./internal/workflow.js"
import type * as Memory from "./Memory.js"
import { MemoryStore } from "./MemoryStore.js"
import type { Progressive, Skill } from "./Skills.js"
import type { SubAgentTool } from "./SubAgent.js"

/** What an agent may be given as a tool: a tool, a skill (a tool with instructions and examples), a sub-agent. */
export type AgentTool = Tool.Tool | Skill | SubAgentTool

export interface Options {
  /** The agent's name: its workflow is `agent:<name>`, its memory id by default. */
  readonly name: string
  /**
   * The version of the agent's code, as its workflow's (`Workflow.make({ version })`, default "1"): its runs record
   * it, and workers continue only runs of versions they have (`Worker.run({ versions })`). Raise it when a change of
   * the tools, the prompt or the loop would not replay the runs in flight.
   */
  readonly version?: string | undefined
  /** Who the agent is and how it works: the identity part of the system prompt. */
  readonly instructions: string
  readonly tools?: ReadonlyArray<AgentTool> | undefined
  /** The model; default the `ModelPort`'s. A run may name another. */
  readonly model?: string | undefined
  /** Model steps a run may take (compaction summaries excluded) before it fails with `MaxTurnsExceeded`. Default 25. */
  readonly maxTurns?: number | undefined
  /** Re-asks when the final answer does not decode with the output schema. Default 2. */
  readonly maxDecodeRetries?: number | undefined
  readonly maxOutputTokens?: number | undefined
  /**
   * Only skill names and one-line summaries in the prompt; `load_skill` gives a skill's full schema, instructions
   * and examples, and its tool is offered from the next turn. Default false: every tool with its full schema.
   * Loaded skills form a working set: loading one more than it holds unloads the least recently used (loaded or
   * called), which the model can load again. With `true` it starts at `Skills.WORKING_SET` (5) skills and grows by
   * one each time the model loads again a skill that was unloaded, so it settles at what the work needs at once;
   * `{ maxLoaded: n }` fixes it at n, `{ maxLoaded: Infinity }` never unloads.
   */
  readonly progressiveSkills?: boolean | Progressive | undefined
  /** Summarizes the oldest history when it passes a threshold. Default: none (the history grows). */
  readonly compaction?: CompactionStrategy | undefined
  /**
   * After a compaction, once the run's log holds more than this many events, the agent continues as a new run of
   * the same lineage (`ctx.continueAsNew`), handing over its compacted context (summary and recent history), what
   * its sections rendered, its skills' working set, and its turns, usage and cost so far; its long-term memory is
   * in the `MemoryStore` and carries over by itself. So a run that goes on for days is a chain of bounded runs:
   * resuming one reads at most about this many events. The caller gets the last run's result under its id
   * (`<runId>::continued::<n>`); usage, cost and turns in it count the whole chain, and `maxTurns` bounds the chain.
   * Default `DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS` (10,000: a few MB of log, read in well under a second); `false`:
   * never. Without `compaction` the agent never continues as new.
   */
  readonly continueAsNewAfterEvents?: number | false | undefined
  /** Long-term memory: the memory tools and the `[CORE MEMORY]` section. Default on; `false` turns it off. */
  readonly memory?: Memory.Options | false | undefined
  /** The context builder (a subclass, or one with sections of its own). Default `new ContextBuilder()`. */
  readonly context?: ContextBuilder | undefined
  /** More sections, after the builder's own and the memory section. */
  readonly sections?: ReadonlyArray<ContextSection> | undefined
  /** Extensions (sections, tools, `onFinish` hooks) another package supplies. */
  readonly extensions?: ReadonlyArray<Extension> | undefined
  /**
   * Accept steering messages: before each turn's model step, every signal named `STEERING_SIGNAL` sent to the run
   * (`Kernel.signal`, payload `{ text }`) and not taken yet becomes a user message in the history, in the order sent,
   * each taken by a logged step (`turn:<n>/steer:<i>`), so a replay injects the same messages at the same turn. A
   * turn with no message logs one `SignalTimedOut` (the wait of no time that found none). Default false: a run
   * logged without steering replays as it was.
   */
  readonly steering?: boolean | undefined
}

/** The signal name an agent with `steering: true` takes as a user message between turns. */
export const STEERING_SIGNAL = internal.STEERING_SIGNAL

/** The payload of a steering signal: the text the agent gets as a user message. */
export const SteeringMessage = internal.SteeringMessage
export type SteeringMessage = typeof SteeringMessage.Type

/** What a run is given (its task and model, and what a run it continues hands over): the agent's workflow input. */
export const Input = internal.Input
export type Input = typeof Input.Type

/** The default of `continueAsNewAfterEvents`. */
export const DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS = internal.DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS

export interface RunOptions<A, I> {
  /** The run's id; a new UUID when absent. Running an existing id continues that run (a crashed run resumes). */
  readonly runId?: string | undefined
  readonly tenant: Tenant.TenantContext
  /** The task. */
  readonly prompt: string
  /** The model of this run; default the agent's. */
  readonly model?: string | undefined
  /** The final answer is JSON decoded with this schema; without one, the answer's text. */
  readonly outputSchema?: Schema.Schema<A, I> | undefined
  /** The run that started this one (its lineage and budget). */
  readonly parentRunId?: string | undefined
}

/** What a completed run returns (and logs as its output). */
export interface AgentOutput<A> {
  readonly output: A
  /** Model steps taken, compaction summaries excluded. */
  readonly turns: number
  readonly compactions: number
  /** Tokens and USD of every model step of this run (summaries included; sub-agents' runs not). */
  readonly usage: Chat.Usage
  readonly costUsd: number
}

/** The schema of a run's output (`AgentOutput`), for an output schema. */
export const outputSchemaOf = internal.outputSchemaOf

/** Errors of the agent's own code: the run fails with them (`RunFailed` in the log). */
export type RunError = Workflow.ChatError | ContextOverflow | ExtensionError | Errors.StoreError | ServiceMissing

/** The services an agent's runs need. */
export type Requirements = Kernel.Kernel | ModelPort.ModelPort | MemoryStore

export interface Agent {
  readonly name: string
  readonly options: Options
  /** Runs the agent on a task (or continues the run `runId`, after a crash). */
  readonly run: <A = string, I = string>(
    options: RunOptions<A, I>
  ) => Effect.Effect<Kernel.RunResult<AgentOutput<A>>, RunError | Kernel.KernelError, Requirements>
  /** Re-runs a run over its log: nothing runs, nothing is written; any divergence is `NonDeterminism`. */
  readonly replay: <A = string, I = string>(options: {
    readonly tenantId: string
    readonly runId: string
    readonly outputSchema?: Schema.Schema<A, I> | undefined
  }) => Effect.Effect<Kernel.RunResult<AgentOutput<A>>, RunError | Kernel.KernelError, Requirements>
  /**
   * The agent as a workflow value (`agent:<name>`, input `{ prompt, model }`, output the `AgentOutput`: the answer, turns, usage, cost), for workers,
   * the session API and `Artana.layer({ workflows })`: its runs read the kernel, the model and the `MemoryStore` from
   * the kernel's services (`Artana.layer({ services: [memory] })`, as `AgentClient.create` builds it).
   */
  readonly workflow: Workflow.Workflow<Input, AgentOutput<string>, RunError>
  /** The same, with the final answer decoded with `outputSchema`. */
  readonly workflowFor: <A, I>(outputSchema: Schema.Schema<A, I>) => Workflow.Workflow<Input, AgentOutput<A>, RunError>
}

/** The workflow name of an agent: `agent:<name>`. */
export const workflowName = internal.workflowName

const environment = Effect.all({ kernel: Kernel.Kernel, model: ModelPort.ModelPort, memory: MemoryStore })

/**
 * Defines an agent. Throws on a definition that cannot work (a programming error): an empty name, two tools with
 * one name, a tool named like one of the agent's own (`load_skill`, the memory tools).
 */
export const make = (options: Options): Agent => {
  if (options.name.trim() === "") throw new Error("AutonomousAgent: the name must not be empty")
  const progressive = options.progressiveSkills
  const after = options.continueAsNewAfterEvents
  if (after !== undefined && after !== false && !(Number.isInteger(after) && after >= 1)) {
    throw new Error(`AutonomousAgent "${options.name}": continueAsNewAfterEvents must be a whole number of at least 1 (or false), not ${after}`)
  }
  if (typeof progressive === "object" && progressive !== null && progressive.maxLoaded !== undefined && !((Number.isInteger(progressive.maxLoaded) || progressive.maxLoaded === Infinity) && progressive.maxLoaded >= 1)) {
    throw new Error(`AutonomousAgent "${options.name}": progressiveSkills.maxLoaded must be a whole number of at least 1 (or Infinity), not ${progressive.maxLoaded}`)
  }
  let textWorkflow: Workflow.Workflow<Input, AgentOutput<string>, RunError> | undefined
  const agent: Agent = {
    name: options.name,
    options,
    get workflow() {
      textWorkflow ??= workflowOf<string, string>(agent, undefined, undefined)
      return textWorkflow
    },
    workflowFor: (outputSchema) => workflowOf(agent, undefined, outputSchema),
    run: (run) =>
      Effect.gen(function*() {
        const env = yield* environment
        const workflow = workflowOf(agent, env, run.outputSchema)
        return yield* env.kernel.execute(workflow, {
          runId: run.runId,
          tenant: run.tenant,
          parentRunId: run.parentRunId,
          input: { prompt: run.prompt, model: run.model ?? options.model ?? env.model.defaultModel }
        })
      }).pipe(Effect.withSpan("AutonomousAgent.run", { attributes: { agent: options.name } })),
    replay: (run) =>
      Effect.gen(function*() {
        const env = yield* environment
        return yield* env.kernel.replay(workflowOf(agent, env, run.outputSchema), { tenantId: run.tenantId, runId: run.runId })
      })
  }
  validate(agent)
  return agent
}
