/**
 * Experience in durable workflows: fetch a task's rules in a memoized step (a replay reads them from the log, not
 * from the store), render them for a prompt, reflect on a run in a model step of its own, and save or reinforce
 * rules in steps whose writes happen once even when a crash lands between the write and its record in the log.
 *
 * @since 0.1.0
 */
import type { Chat, Errors, Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { ExperienceRule, type ExtractedRule, ReflectionResult } from "./ExperienceRule.js"
import type * as ExperienceStore from "./ExperienceStore.js"

/** The heading of the rules section in a prompt. */
export const HEADING = "[PAST LEARNINGS FOR THIS TASK]"

/**
 * The rules as a prompt section: the heading, then one `RULE_TYPE: content` line per rule, in the order given (the
 * store's ranking). No rules, no section: an empty string.
 *
 * @example
 * render(rules)
 * // [PAST LEARNINGS FOR THIS TASK]
 * // FACT: book_flight takes dates as YYYY-MM-DD
 * // ANTI_PATTERN: passing 03/15/2026 to book_flight fails
 */
export const render = (rules: ReadonlyArray<ExperienceRule>): string =>
  rules.length === 0 ? "" : [HEADING, ...rules.map((r) => `${r.ruleType.toUpperCase()}: ${r.content.replace(/\s+/g, " ").trim()}`)].join("\n")

const Rules = Schema.Array(ExperienceRule)

/**
 * The tenant's rules for `taskCategory`, fetched in a memoized step (default name `fetch_rules`): a resumed or
 * replayed run gets the rules it saw the first time, from its log.
 */
export const fetchRules = (
  store: ExperienceStore.Service,
  ctx: Workflow.WorkflowContext,
  options: { readonly taskCategory: string; readonly limit?: number | undefined; readonly name?: string | undefined; readonly key?: string | undefined }
): Effect.Effect<ReadonlyArray<ExperienceRule>, Errors.StoreError> => ctx.step(options.name ?? "fetch_rules", store.getRules(ctx.tenant.tenantId, options.taskCategory, options.limit), Rules, { key: options.key })

/** How a run ended, as a reflection is told. */
export type Outcome = "success" | "failure"

export interface ReflectOptions {
  readonly taskCategory: string
  /** The run's conversation (or the part worth reflecting on). */
  readonly messages: ReadonlyArray<Chat.ChatMessage>
  readonly outcome: Outcome
  /** The rules the run had in its prompt: the model is asked not to restate them unless they proved true again. */
  readonly knownRules?: ReadonlyArray<ExperienceRule> | undefined
  /** Model for the reflection (a cheap one does); the ModelPort's default when absent. */
  readonly model?: string | undefined
  /** The step key of the reflection (default the kernel's `model:<index>`); agents use `turn_<N>_reflection`. */
  readonly key?: string | undefined
  /** At most this many rules are kept from the answer. Default 5. */
  readonly maxRules?: number | undefined
  /** Characters of transcript sent, the most recent kept. Default 12,000. */
  readonly maxTranscriptChars?: number | undefined
}

const INSTRUCTIONS = `You review a finished run of an AI agent to help later runs of the same task.
Extract at most a few short, general rules that would have made this run faster or correct from the start:
- win_pattern: an approach that worked and should be repeated;
- anti_pattern: a mistake that was made (a failed tool call, a wrong format, a wasted step) and how to avoid it;
- fact: a stable fact about the task or its tools (formats, limits, names).
Each rule is one sentence that stands on its own, without names of this run's data. Return an empty list when
there is nothing worth keeping. Answer with JSON only.`

/** The conversation as text for the reflection prompt: the most recent part, within `maxChars`. */
export const transcript = (messages: ReadonlyArray<Chat.ChatMessage>, maxChars: number): string => {
  const lines = messages.map((m) => {
    switch (m.role) {
      case "assistant": {
        const calls = (m.toolCalls ?? []).map((c) => `call ${c.name}(${c.arguments})`).join("; ")
        return `assistant: ${[m.content ?? "", calls].filter((s) => s !== "").join(" | ")}`
      }
      case "tool":
        return `tool ${m.name} result: ${m.content}`
      default:
        return `${m.role}: ${m.content}`
    }
  })
  const out: Array<string> = []
  let size = 0
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!
    if (size + line.length + 1 > maxChars) {
      out.unshift("(earlier messages left out)")
      break
    }
    out.unshift(line)
    size += line.length + 1
  }
  return out.join("\n")
}

/**
 * Asks the model what the run taught, in one model step of its own (logged and replayed like any, so a resumed
 * run gets the same rules). An answer that does not decode as `ReflectionResult` teaches nothing: the run is not
 * failed for it.
 */
export const reflect = (
  ctx: Workflow.WorkflowContext,
  options: ReflectOptions
): Effect.Effect<ReadonlyArray<ExtractedRule>, Workflow.ModelStepError> =>
  Effect.map(
    ctx.modelStep({
      messages: [
        { role: "system", content: INSTRUCTIONS },
        {
          role: "user",
          content: [
            `Task category: ${options.taskCategory}`,
            `Outcome: ${options.outcome}`,
            ...(options.knownRules === undefined || options.knownRules.length === 0 ? [] : [`Rules the run already had:\n${render(options.knownRules)}`]),
            `Transcript:\n${transcript(options.messages, options.maxTranscriptChars ?? 12_000)}`
          ].join("\n\n")
        }
      ],
      model: options.model,
      tools: [],
      outputSchema: ReflectionResult,
      key: options.key
    }),
    (step): ReadonlyArray<ExtractedRule> =>
      step.answer !== undefined && Either.isRight(step.answer) ? step.answer.right.extractedRules.slice(0, options.maxRules ?? 5) : []
  )

/**
 * Saves rules learned by this run, with its tenant and `taskCategory`, in a memoized step (default name
 * `save_rules`). The write carries the idempotency key `<runId>/<name>`: if the process dies after the write but
 * before the step is logged, the resumed run's write changes nothing.
 */
export const saveRules = (
  store: ExperienceStore.Service,
  ctx: Workflow.WorkflowContext,
  options: { readonly taskCategory: string; readonly rules: ReadonlyArray<ExtractedRule>; readonly name?: string | undefined; readonly key?: string | undefined }
): Effect.Effect<ReadonlyArray<ExperienceRule>, ExperienceStore.InvalidRule | Errors.StoreError> => {
  const name = options.name ?? "save_rules"
  const rules = options.rules.map((r) => ({ tenantId: ctx.tenant.tenantId, taskCategory: options.taskCategory, ruleType: r.ruleType, content: r.content }))
  return ctx.step(name, store.saveRules(rules, { idempotencyKey: `${ctx.runId}/${options.key ?? name}` }), Rules, { key: options.key })
}

/**
 * Counts this run for the rules it had (a success for each when `positive`, else a failure), in a memoized step
 * (default name `reinforce_rules`), each write once per run.
 */
export const reinforce = (
  store: ExperienceStore.Service,
  ctx: Workflow.WorkflowContext,
  options: { readonly ruleIds: ReadonlyArray<string>; readonly positive: boolean; readonly name?: string | undefined; readonly key?: string | undefined }
): Effect.Effect<ReadonlyArray<ExperienceRule>, Errors.StoreError> => {
  const name = options.name ?? "reinforce_rules"
  const write = Effect.forEach(options.ruleIds, (ruleId) =>
    store.reinforce(ctx.tenant.tenantId, ruleId, options.positive, { idempotencyKey: `${ctx.runId}/${options.key ?? name}/${ruleId}` }).pipe(
      // A rule deleted since the run read it is nothing to count.
      Effect.catchTag("RuleNotFound", () => Effect.succeed(undefined))
    ))
  return ctx.step(name, Effect.map(write, (rules) => rules.filter((r) => r !== undefined)), Rules, { key: options.key })
}
