/**
 * The agent as a workflow value: its runs read their services from the kernel's context (or are given them), turn
 * its sub-agents into kernel tools that run child runs, and run the agent loop.
 */
import { Errors, Json, Kernel, ModelPort, Tool, Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ServiceMissing, SubAgentFailed } from "../AgentErrors.js"
import type { Agent, AgentOutput, RunError } from "../AutonomousAgent.js"
import * as MemoryStore from "../MemoryStore.js"
import * as Skills from "../Skills.js"
import * as SubAgent from "../SubAgent.js"
import { declaredTools, isSubAgent } from "./definition.js"
import { loop } from "./loop.js"
import { type Env, Input, outputSchemaOf, workflowName } from "./schemas.js"

/** The agent's declared tools for one run (sub-agents become kernel tools over `env`). */
const skillsOf = (agent: Agent, env: Env, runModel: string): ReadonlyArray<Skills.Skill> =>
  declaredTools(agent).map((t) => (isSubAgent(t) ? Skills.make(subAgentTool(t, env, runModel)) : Skills.of(t)))

/** A sub-agent as a kernel tool: its call runs the child agent as a child run. */
const subAgentTool = (sub: SubAgent.SubAgentTool, env: Env, parentModel: string): Tool.Tool =>
  Tool.make({
    name: sub.name,
    description: sub.description,
    parameters: Schema.Struct({
      task: Schema.String.annotations({ description: "The task for the sub-agent, self-contained: it sees nothing of this conversation" })
    }),
    idempotent: true,
    handler: ({ task }, ctx) =>
      Effect.gen(function*() {
        const childRunId = SubAgent.childRunId(ctx.runId, ctx.idempotencyKey)
        const failed = (reason: string) => new SubAgentFailed({ tool: sub.name, childRunId, reason })
        const workflow = workflowOf(sub.agent, env, sub.outputSchema)
        const result = yield* env.kernel.execute(workflow, {
          runId: childRunId,
          tenant: ctx.tenant,
          parentRunId: ctx.runId,
          input: { prompt: task, model: sub.model ?? sub.agent.options.model ?? parentModel },
          // The child acts in the parent's name: once the parent's execution loses its run, no child handler starts.
          lease: ctx.lease
        }).pipe(Effect.mapError((e) => failed(`${e._tag}: ${e.message}`)))
        if (result.status === "needs_reconciliation") {
          // The child waits for a person: not a failure the model should hear of. The parent waits too, and its
          // resume, once the child is settled, runs this call again, which continues the same child run.
          return yield* new Errors.WaitingOnRun({ runId: childRunId, stepKey: result.stepKey, tool: result.tool, waitingOn: result.waitingOn })
        }
        if (result.status === "paused") return yield* failed(`it paused (${result.reason})`)
        const encoded = workflow.encodeOutput(result.output)
        if (Either.isLeft(encoded)) return yield* failed(`its output does not encode: ${encoded.left.message}`)
        const json = Json.fromUnknown(encoded.right)
        if (!json.ok || !Json.isObject(json.json)) return yield* failed("its output is not a JSON object")
        return json.json["output"] ?? null
      })
  })

/** The services a run uses, read from the context its code runs in (the kernel's: see `Kernel.make`). */
const envFromContext = (agent: Agent): Effect.Effect<Env, ServiceMissing> =>
  Effect.gen(function*() {
    const missing = (service: string) => new ServiceMissing({ agent: agent.name, service })
    const kernel = yield* Effect.serviceOption(Kernel.Kernel)
    const model = yield* Effect.serviceOption(ModelPort.ModelPort)
    const memory = yield* Effect.serviceOption(MemoryStore.MemoryStore)
    if (Option.isNone(kernel)) return yield* missing("the Kernel")
    if (Option.isNone(model)) return yield* missing("a ModelPort")
    if (Option.isNone(memory)) return yield* missing("a MemoryStore")
    return { kernel: kernel.value, model: model.value, memory: memory.value }
  })

/**
 * The agent as a workflow for one output schema. `env` gives the services its runs use; without it, a run reads them
 * from the services its code runs with (the kernel's), so the workflow is a plain value workers can hold.
 */
export const workflowOf = <A, I>(
  agent: Agent,
  env: Env | undefined,
  outputSchema: Schema.Schema<A, I> | undefined
): Workflow.Workflow<Input, AgentOutput<A>, RunError> =>
  Workflow.make({
    name: workflowName(agent.name),
    version: agent.options.version,
    input: Input,
    // Without an output schema the output is the answer's text (A is string then, as `run` types it).
    output: outputSchemaOf(outputSchema ?? (Schema.String as unknown as Schema.Schema<A, I>)),
    run: (input, ctx) => {
      const go = (found: Env) => Effect.suspend(() => loop(agent, found, outputSchema, input, ctx, skillsOf(agent, found, input.model)))
      return env === undefined ? Effect.flatMap(envFromContext(agent), go) : go(env)
    }
  })
