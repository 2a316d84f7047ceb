/**
 * The agent loop, as a workflow: render the sections, compact when the prompt passes the threshold, take one model
 * step, run the tool calls it asked for, until the answer decodes. Every effect goes through the workflow context,
 * with explicit step keys: `turn:<n>` (model), `turn:<n>/tool:<i>`, `turn:<n>/section:<name>`, `compaction:<k>`,
 * `finish:<extension>:<name>`.
 */
import { Chat, ChatLoop, Errors, Json, Kernel, ModelPort, Tenant, Tool, Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ContextOverflow, ExtensionError, ServiceMissing, SubAgentFailed } from "../AgentErrors.js"
import type { Agent, AgentOutput, AgentTool, RunError } from "../AutonomousAgent.js"
import * as CompactionStrategy from "../CompactionStrategy.js"
import { ContextBuilder, type PromptParts, type RenderedSection } from "../ContextBuilder.js"
import type { Extension, FinishInput, Outcome } from "../Extension.js"
import * as Memory from "../Memory.js"
import * as MemoryStore from "../MemoryStore.js"
import * as Skills from "../Skills.js"
import * as SubAgent from "../SubAgent.js"

/** The services a run uses, read when it starts. */
export interface Env {
  readonly kernel: Kernel.Service
  readonly model: ModelPort.Service
  readonly memory: MemoryStore.Service
}

type ChatMessage = Chat.ChatMessage

/**
 * What a run hands over when it continues as new (`continueAsNewAfterEvents`): the compacted context (summary and
 * the recent history), what the sections rendered last, the skills' working set, and the counts and spend so far.
 */
export const Carried = Schema.Struct({
  summary: Schema.optional(Schema.String),
  history: Schema.Array(Chat.ChatMessage),
  sections: Schema.Array(Schema.Tuple(Schema.String, Schema.String)),
  loadedSkills: Schema.Array(Schema.String),
  unloadedSkills: Schema.Array(Schema.String),
  /** The adaptive working set's size (a fixed one comes from the options). */
  maxLoaded: Schema.optional(Schema.Number),
  turns: Schema.Number,
  compactions: Schema.Number,
  usage: Chat.Usage,
  costUsd: Schema.Number
})
export type Carried = typeof Carried.Type

export const Input = Schema.Struct({ prompt: Schema.String, model: Schema.String, carried: Schema.optional(Carried) })
export type Input = typeof Input.Type

/** The signal name an agent with `steering` takes as a user message between turns. */
export const STEERING_SIGNAL = "artana.steer"

export const SteeringMessage = Schema.Struct({ text: Schema.String })

/** Events a run's log may hold before the agent continues as new after a compaction (`continueAsNewAfterEvents`). */
export const DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS = 10_000

export const outputSchemaOf = <A, I>(output: Schema.Schema<A, I>) =>
  Schema.Struct({ output, turns: Schema.Number, compactions: Schema.Number, usage: Chat.Usage, costUsd: Schema.Number })

export const workflowName = (name: string): string => `agent:${name}`

const isSubAgent = (t: AgentTool): t is SubAgent.SubAgentTool => "_tag" in t && t._tag === "SubAgentTool"

/** The names an agent's own tools take; a user tool may not take them. */
const reserved = [Skills.LOAD_SKILL, Memory.APPEND, Memory.REPLACE, Memory.SEARCH]

/** Throws on an agent definition that cannot work (see `AutonomousAgent.make`). */
export const validate = (agent: Agent): void => {
  const o = agent.options
  const names = new Set<string>()
  const extensions = new Set<string>()
  for (const e of o.extensions ?? []) {
    if (extensions.has(e.name)) throw new Error(`agent "${agent.name}": two extensions are named "${e.name}"`)
    extensions.add(e.name)
  }
  for (const t of [...(o.tools ?? []), ...(o.extensions ?? []).flatMap((e) => e.tools ?? [])]) {
    const name = isSubAgent(t) ? t.name : Skills.of(t).tool.name
    if (isSubAgent(t) && !/^[a-zA-Z0-9_.-]{1,64}$/.test(name)) throw new Error(`agent "${agent.name}": sub-agent tool name "${name}" must match [a-zA-Z0-9_.-]{1,64}`)
    if (reserved.includes(name)) throw new Error(`agent "${agent.name}": the tool name "${name}" is the agent's own; rename the tool`)
    if (names.has(name)) throw new Error(`agent "${agent.name}": two tools are named "${name}"; tool names must be unique`)
    names.add(name)
  }
  // The builder refuses duplicate section names; the memory section's name is taken when memory is on.
  const sections = builderOf(agent, undefined).sections
  if (o.memory !== false && sections.some((section) => section.name === Memory.SECTION)) {
    throw new Error(`agent "${agent.name}": the section name "${Memory.SECTION}" is the memory section's; rename the section or set memory: false`)
  }
}

const builderOf = (agent: Agent, memory: MemoryStore.Service | undefined): ContextBuilder => {
  const o = agent.options
  const memorySection = o.memory === false || memory === undefined ? [] : [Memory.section(memory, memoryId(agent), o.memory ?? {})]
  return (o.context ?? new ContextBuilder()).withSections(
    ...memorySection,
    ...(o.sections ?? []),
    ...(o.extensions ?? []).flatMap((e) => e.sections ?? [])
  )
}

const memoryId = (agent: Agent) => (agent.options.memory === false ? agent.name : agent.options.memory?.agentId ?? agent.name)

/** The agent's tools for one run (sub-agents become kernel tools over `env`). */
const skillsOf = (agent: Agent, env: Env, runModel: string): ReadonlyArray<Skills.Skill> =>
  [...(agent.options.tools ?? []), ...(agent.options.extensions ?? []).flatMap((e) => e.tools ?? [])].map((t) =>
    isSubAgent(t) ? Skills.make(subAgentTool(t, env, runModel)) : Skills.of(t)
  )

/**
 * The extensions' tools of this run (`Extension.runTools`), in the extensions' order, as skills; a failing hook or a
 * tool named like another of the agent's fails the run with an `ExtensionError`.
 */
const runTools = (agent: Agent, ctx: Workflow.WorkflowContext, task: string, model: string): Effect.Effect<ReadonlyArray<Skills.Skill>, ExtensionError> =>
  Effect.gen(function*() {
    const o = agent.options
    const taken = new Set([
      ...reserved,
      ...[...(o.tools ?? []), ...(o.extensions ?? []).flatMap((e) => e.tools ?? [])].map((t) => (isSubAgent(t) ? t.name : Skills.of(t).tool.name))
    ])
    const out: Array<Skills.Skill> = []
    for (const extension of o.extensions ?? []) {
      if (extension.runTools === undefined) continue
      const failed = (reason: string, cause?: unknown) =>
        new ExtensionError({ extension: extension.name, reason, ...(cause === undefined ? {} : { cause }) })
      const tools = yield* Effect.mapError(
        extension.runTools({ ctx, agent: agent.name, task, model, key: (name) => `tools:${extension.name}:${name}` }),
        (e) => failed(`its run tools could not be had: ${e.message}`, e)
      )
      for (const tool of tools) {
        if (taken.has(tool.name)) return yield* failed(`its run tool "${tool.name}" is named like another tool of the agent; rename one`)
        taken.add(tool.name)
        out.push(Skills.of(tool))
      }
    }
    return out
  })

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

/** The tools' specs as a message, so that counting the prompt counts what the tools take too. */
const toolsMessage = (tools: ReadonlyArray<Tool.Tool>): ChatMessage => Chat.system(JSON.stringify(tools.map((t) => t.spec)))

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
    run: (input, ctx) =>
      env === undefined
        ? Effect.flatMap(envFromContext(agent), (found) => loop(agent, found, outputSchema, input, ctx))
        : loop(agent, env, outputSchema, input, ctx)
  })

const loop = <A, I>(
  agent: Agent,
  env: Env,
  outputSchema: Schema.Schema<A, I> | undefined,
  input: Input,
  ctx: Workflow.WorkflowContext<Input>
): Effect.Effect<AgentOutput<A>, RunError> =>
  Effect.gen(function*() {
    const o = agent.options
    const model = input.model
    const task = input.prompt
    const builder = builderOf(agent, env.memory)
    const skills = [...skillsOf(agent, env, model), ...(yield* runTools(agent, ctx, task, model))]
    const skillByName = new Map(skills.map((s) => [s.tool.name, s]))
    // Loaded skills' instructions and examples, shown in the skills list while they are loaded.
    const guides = new Map(skills.map((s) => [s.tool.name, Skills.guideOf(s)]))
    const options = typeof o.progressiveSkills === "object" && o.progressiveSkills !== null ? o.progressiveSkills : undefined
    const progressive = o.progressiveSkills === true || options !== undefined
    // The working set: fixed by `maxLoaded`, or adaptive (starts at WORKING_SET, grows on each reload of an unloaded skill).
    const adaptive = options?.maxLoaded === undefined
    let maxLoaded = options?.maxLoaded ?? Skills.WORKING_SET
    const own: ReadonlyArray<Tool.Tool> = [
      ...(o.memory === false ? [] : Memory.tools(env.memory, memoryId(agent), o.memory ?? {})),
      ...(progressive ? [Skills.loadSkillTool(skills)] : [])
    ]
    const maxTurns = o.maxTurns ?? 25
    const maxDecodeRetries = o.maxDecodeRetries ?? 2
    const compaction = o.compaction
    const extensions = (o.extensions ?? []).filter((e): e is Extension & { onFinish: NonNullable<Extension["onFinish"]> } => e.onFinish !== undefined)

    const carried = input.carried
    // Turns taken by the runs this one continues (0 for the first run of a chain).
    const turnsBefore = carried?.turns ?? 0
    const continueAfter = o.continueAsNewAfterEvents ?? DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS
    let history: Array<ChatMessage> = [...(carried?.history ?? [])]
    let summary: string | undefined = carried?.summary
    // Loaded skills, least recently used (loaded or called) first: the order of the log, so a replay unloads the
    // same ones; and the skills unloaded to stay within `maxLoaded`.
    const loaded = new Set<string>(carried?.loadedSkills ?? [])
    const unloaded = new Set<string>(carried?.unloadedSkills ?? [])
    if (adaptive && carried?.maxLoaded !== undefined) maxLoaded = carried.maxLoaded
    const use = (name: string) => {
      loaded.delete(name)
      loaded.add(name)
      unloaded.delete(name)
      for (const oldest of loaded) {
        if (loaded.size <= maxLoaded) break
        loaded.delete(oldest)
        unloaded.add(oldest)
      }
    }
    const previous = new Map<string, string>(carried?.sections ?? [])
    // Usage and cost of every step: the turns' model steps and the compactions' summaries (the chain's, carried).
    const tally = ChatLoop.tally()
    if (carried !== undefined) ChatLoop.account(tally, carried)
    let compactions = carried?.compactions ?? 0

    const offered = (): ReadonlyArray<Tool.Tool> =>
      progressive ? [...own, ...skills.filter((s) => loaded.has(s.tool.name)).map((s) => s.tool)] : [...own, ...skills.map((s) => s.tool)]

    const partsOf = (sections: ReadonlyArray<RenderedSection>): PromptParts => ({
      identity: o.instructions,
      sections,
      skills: progressive
        ? skills.map((s) => ({ name: s.tool.name, summary: s.summary, loaded: loaded.has(s.tool.name), guide: loaded.has(s.tool.name) ? guides.get(s.tool.name) : undefined }))
        : undefined,
      task,
      summary,
      history
    })

    const conversation = (): ReadonlyArray<ChatMessage> => [
      Chat.user(task),
      ...(summary === undefined ? [] : [builder.summaryMessage(summary)]),
      ...history
    ]

    const finish = (outcome: Outcome, turns: number) =>
      Effect.forEach(extensions, (e) => {
        const finishInput: FinishInput = {
          ctx,
          agent: agent.name,
          task,
          model,
          outcome,
          messages: conversation(),
          turns,
          key: (name) => `finish:${e.name}:${name}`
        }
        return e.onFinish(finishInput)
      }, { discard: true })

    const failWith = <E extends Errors.OutputDecodeError | Errors.MaxTurnsExceeded | ContextOverflow>(error: E, turns: number) =>
      Effect.zipRight(finish({ _tag: "failure", errorTag: error._tag, message: error.message }, turns), Effect.fail(error))

    /** Folds the oldest history into the summary until the prompt is under the strategy's thresholds. */
    const compact = (strategy: CompactionStrategy.CompactionStrategy, sections: ReadonlyArray<RenderedSection>, tools: ReadonlyArray<Tool.Tool>) =>
      Effect.gen(function*() {
        const visible = tools.filter((t) => Tenant.hasCapability(ctx.tenant, t.requiresCapability))
        const count = () => env.model.countTokens([...builder.messages(partsOf(sections)), toolsMessage(visible)], model)
        const tooMany = () => strategy.triggerAtMessages !== undefined && history.length > strategy.triggerAtMessages
        const tooLong = (tokens: number) => strategy.boundTokens !== undefined && tokens > strategy.boundTokens
        let tokens = yield* count()
        let keep = strategy.keepRecentMessages
        while (tooMany() || tooLong(tokens)) {
          const cut = CompactionStrategy.cutIndex(history, keep)
          if (cut > 0) {
            const folded = yield* CompactionStrategy.summarize(strategy, ctx, {
              previous: summary,
              messages: history.slice(0, cut),
              task,
              key: `compaction:${compactions}`
            })
            ChatLoop.account(tally, folded.step)
            compactions++
            summary = folded.summary
            history = history.slice(cut)
            tokens = yield* count()
            continue
          }
          if (keep === 0) {
            return yield* new ContextOverflow({
              runId: ctx.runId,
              boundTokens: strategy.boundTokens ?? 0,
              promptTokens: tokens,
              reason: "the instructions, sections, task and summary alone are over it"
            })
          }
          // Keeping this many does not leave anything to fold (or not enough): keep fewer.
          keep = Math.floor(keep / 2)
        }
      })

    /** The state the next run of the chain starts from, before turn `turn` (taken by that run). */
    const carry = (turn: number): Carried => ({
      ...(summary === undefined ? {} : { summary }),
      history: [...history],
      sections: [...previous],
      loadedSkills: [...loaded],
      unloadedSkills: [...unloaded],
      ...(adaptive && Number.isFinite(maxLoaded) ? { maxLoaded } : {}),
      turns: turn,
      compactions,
      usage: { ...tally.usage },
      costUsd: tally.costUsd
    })

    // The tools of the current turn, as its model step offered them.
    let tools: ReadonlyArray<Tool.Tool> = []

    /**
     * The steering messages sent since the last turn, taken oldest first (each a logged step) into the history. A
     * message that does not decode is taken and dropped (its `SignalReceived` is logged).
     */
    const steer = (turn: number) =>
      Effect.gen(function*() {
        for (let i = 0;; i++) {
          const taken = yield* Effect.either(ctx.waitForSignal(STEERING_SIGNAL, SteeringMessage, { timeout: 0, key: `turn:${turn}/steer:${i}` }))
          if (Either.isLeft(taken)) {
            if (taken.left._tag === "SignalTimeout") return
            continue
          }
          history.push(Chat.user(taken.right.text))
        }
      })

    /** The turn's prompt: its sections rendered, the history compacted when over the strategy's thresholds. */
    const modelStep = (turn: number) =>
      Effect.gen(function*() {
        if (o.steering === true) yield* steer(turn)
        const sections = yield* builder.renderSections({ ctx, agent: agent.name, task, turn, history }, previous)
        for (const s of sections) previous.set(s.name, s.text)
        tools = offered()
        if (compaction !== undefined) {
          const before = compactions
          const compacted = yield* Effect.either(compact(compaction, sections, tools))
          if (Either.isLeft(compacted)) {
            const error = compacted.left
            return yield* (error._tag === "ContextOverflow" ? failWith(error, turn) : Effect.fail(error))
          }
          // Just compacted, in a long run: the next run of the chain takes the compacted context over from here.
          if (continueAfter !== false && compactions > before && (yield* ctx.historyLength()) > continueAfter) {
            return yield* ctx.continueAsNew({ prompt: task, model, carried: carry(turn) })
          }
        }
        return yield* ctx.modelStep({
          messages: builder.messages(partsOf(sections)),
          tools,
          outputSchema,
          model,
          maxOutputTokens: o.maxOutputTokens,
          key: `turn:${turn}`
        })
      })

    /** The calls of an answer, each with what the model is told of it; loading a skill changes the working set. */
    const toolCalls = (step: Workflow.ModelStepResult<A>, turn: number) =>
      Effect.gen(function*() {
        const offeredNames = new Set(tools.map((t) => t.name))
        // An answer that loads more skills than the working set holds needs them all: the set grows to fit them.
        if (progressive && adaptive) maxLoaded = Math.max(maxLoaded, step.toolCalls.filter((c) => c.name === Skills.LOAD_SKILL).length)
        // Skills unloaded before this answer: loading one again shows the working set is too small for the work.
        const unloadedBefore = new Set(unloaded)
        for (const [i, call] of step.toolCalls.entries()) {
          const outcome = yield* ctx.toolCall(call, { tools, key: `turn:${turn}/tool:${i}` })
          let message = outcome.message
          if (Either.isLeft(outcome.result)) {
            // A skill the model has not loaded: the kernel logged it as an unknown tool; the model is told what to do.
            if (progressive && outcome.result.left._tag === "UnknownTool" && skillByName.has(call.name) && !offeredNames.has(call.name)) {
              message = { ...message, content: Skills.notLoaded(call.name, unloaded.has(call.name) ? maxLoaded : undefined) }
            }
          } else if (call.name === Skills.LOAD_SKILL && progressive) {
            const result = outcome.result.right
            const name = Json.isObject(result) ? result["name"] : undefined
            if (typeof name === "string" && skillByName.has(name)) {
              if (adaptive && unloadedBefore.has(name)) maxLoaded++
              use(name)
              // The log holds the whole answer; the prompt shows it from the next turn on (tool list, skills list).
              message = { ...message, content: Skills.inHistory(skillByName.get(name)!) }
            }
          }
          // A call (answered or failed) keeps its skill in use: the least recently used are unloaded first.
          if (progressive && offeredNames.has(call.name) && loaded.has(call.name)) use(call.name)
          history.push(message)
        }
      })

    // Turns are numbered over the chain (keys, sections, `maxTurns`): a continued run goes on from its predecessor's.
    const end = yield* ChatLoop.run({
      maxTurns: Math.max(0, maxTurns - turnsBefore),
      maxDecodeRetries,
      modelStep: (turn) => modelStep(turnsBefore + turn),
      toolCalls: (step, turn) => toolCalls(step, turnsBefore + turn),
      push: (message) => void history.push(message),
      tally
    })
    const turns = turnsBefore + end.turns
    if (end._tag === "GaveUp") {
      return yield* failWith(end.error._tag === "MaxTurnsExceeded" ? new Errors.MaxTurnsExceeded({ maxTurns }) : end.error, turns)
    }
    yield* finish({ _tag: "success", answer: end.step.message.content ?? "", output: end.output }, turns)
    return { output: end.output, turns, compactions, usage: tally.usage, costUsd: tally.costUsd } satisfies AgentOutput<A>
  })
