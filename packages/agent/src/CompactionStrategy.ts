/**
 * Compaction: when an agent's history passes a threshold (a number of messages, or a share of the context window
 * counted in tokens through the `ModelPort`), its oldest messages are summarized by a model step of their own
 * (key `compaction:<n>`, so a replay reproduces every compaction exactly) and replaced by one
 * `Past Events Summary` system message, which later compactions fold into the next summary. The most recent
 * messages are kept, and a tool call is never separated from its results.
 *
 * With a token threshold, the prompt of every model step stays under it: when keeping `keepRecentMessages`
 * messages is not enough, compaction keeps fewer, down to none; a prompt that still does not fit (instructions
 * and sections alone too large) fails the run with `ContextOverflow`.
 *
 * @since 0.1.0
 */
import type { Chat, Workflow } from "@artana/core"
import * as Effect from "effect/Effect"

type ChatMessage = Chat.ChatMessage

export interface Options {
  /** Compact when the history (task and summary excluded) holds more than this many messages. */
  readonly triggerAtMessages?: number | undefined
  /** Compact when the prompt takes more than this share of `contextWindow` tokens (0 < ratio <= 1). */
  readonly triggerAtTokenRatio?: number | undefined
  /** The model's context window in tokens, for `triggerAtTokenRatio`. Default 128,000. */
  readonly contextWindow?: number | undefined
  /** The model that writes summaries (a cheap one does). */
  readonly summarizeWithModel: string
  /** Messages kept as they are, the most recent ones (more when a tool call's results would be cut off). */
  readonly keepRecentMessages: number
  /** Most tokens a summary may take. Default 800. */
  readonly summaryMaxTokens?: number | undefined
  /** Characters of one message the summarizer sees (a long tool result is cut). Default 4,000. */
  readonly maxCharsPerMessage?: number | undefined
  /** Replaces the summarizer's instructions. */
  readonly instructions?: string | undefined
}

export interface CompactionStrategy {
  readonly triggerAtMessages: number | undefined
  /** The token bound of a prompt (`triggerAtTokenRatio` x `contextWindow`), when there is one. */
  readonly boundTokens: number | undefined
  readonly summarizeWithModel: string
  readonly keepRecentMessages: number
  readonly summaryMaxTokens: number
  readonly maxCharsPerMessage: number
  readonly instructions: string
}

export const DEFAULT_INSTRUCTIONS = `You keep the running memory of an AI agent's long task. You are given the summary so far (possibly empty)
and the events that followed it. Write one updated summary that replaces both: what the task is about, facts
learned (numbers, names, identifiers, results of tool calls that matter), decisions made and why, what failed and
should not be retried, and what remains to do. Be concise and factual; keep exact figures and identifiers. Write
the summary text only, no preamble.`

const positiveInt = (name: string, n: number | undefined) => {
  if (n !== undefined && (!Number.isInteger(n) || n < 0)) throw new Error(`CompactionStrategy: ${name} must be a non-negative integer, got ${n}`)
}

/**
 * A compaction strategy. Throws on options that cannot work (a programming error): no trigger, a ratio outside
 * (0, 1], or a message trigger at or below `keepRecentMessages` (the history would compact on every step).
 *
 * @example
 * const compaction = CompactionStrategy.make({
 *   triggerAtTokenRatio: 0.75, contextWindow: 128_000, summarizeWithModel: "gpt-4o-mini", keepRecentMessages: 10
 * })
 */
export const make = (options: Options): CompactionStrategy => {
  const { triggerAtMessages, triggerAtTokenRatio, keepRecentMessages } = options
  if (triggerAtMessages === undefined && triggerAtTokenRatio === undefined) {
    throw new Error("CompactionStrategy: give triggerAtMessages, triggerAtTokenRatio, or both")
  }
  positiveInt("keepRecentMessages", keepRecentMessages)
  positiveInt("triggerAtMessages", triggerAtMessages)
  if (triggerAtMessages !== undefined && triggerAtMessages <= keepRecentMessages) {
    throw new Error(`CompactionStrategy: triggerAtMessages (${triggerAtMessages}) must be more than keepRecentMessages (${keepRecentMessages})`)
  }
  if (triggerAtTokenRatio !== undefined && !(triggerAtTokenRatio > 0 && triggerAtTokenRatio <= 1)) {
    throw new Error(`CompactionStrategy: triggerAtTokenRatio must be in (0, 1], got ${triggerAtTokenRatio}`)
  }
  const contextWindow = options.contextWindow ?? 128_000
  positiveInt("contextWindow", contextWindow)
  return {
    triggerAtMessages,
    boundTokens: triggerAtTokenRatio === undefined ? undefined : Math.floor(triggerAtTokenRatio * contextWindow),
    summarizeWithModel: options.summarizeWithModel,
    keepRecentMessages,
    summaryMaxTokens: options.summaryMaxTokens ?? 800,
    maxCharsPerMessage: options.maxCharsPerMessage ?? 4_000,
    instructions: options.instructions ?? DEFAULT_INSTRUCTIONS
  }
}

/**
 * Where the history may be cut: the indexes at which a group starts. An assistant message that calls tools and
 * the tool messages answering it are one group, so a cut never separates a call from its results.
 */
export const boundaries = (history: ReadonlyArray<ChatMessage>): ReadonlyArray<number> => {
  const starts: Array<number> = []
  for (let i = 0; i < history.length; i++) {
    if (history[i]!.role !== "tool") starts.push(i)
  }
  starts.push(history.length)
  return starts
}

/**
 * The index of the first message kept when at least `keep` recent messages are kept: the last group boundary at
 * or before `length - keep` (0 when nothing can be folded away).
 */
export const cutIndex = (history: ReadonlyArray<ChatMessage>, keep: number): number => {
  const target = Math.max(0, history.length - keep)
  let cut = 0
  for (const b of boundaries(history)) {
    if (b <= target) cut = b
  }
  return cut
}

const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max)} [... ${text.length - max} more characters]`)

/** Messages as a plain transcript, one line per message, each at most `maxChars` characters. */
export const transcript = (messages: ReadonlyArray<ChatMessage>, maxChars: number): string =>
  messages.map((m) => {
    switch (m.role) {
      case "assistant": {
        const calls = (m.toolCalls ?? []).map((c) => `call ${c.name}(${c.arguments})`).join("; ")
        return clip(`assistant: ${[m.content ?? "", calls].filter((s) => s !== "").join(" | ")}`, maxChars)
      }
      case "tool":
        return clip(`tool ${m.name} result: ${m.content}`, maxChars)
      default:
        return clip(`${m.role}: ${m.content}`, maxChars)
    }
  }).join("\n")

/**
 * Folds `messages` into `previous` with one model step keyed `key`: the new summary's text.
 */
export const summarize = (
  strategy: CompactionStrategy,
  ctx: Workflow.WorkflowContext,
  options: { readonly previous: string | undefined; readonly messages: ReadonlyArray<ChatMessage>; readonly task: string; readonly key: string }
): Effect.Effect<{ readonly summary: string; readonly step: Workflow.ModelStepResult<string> }, Workflow.ModelStepError> =>
  Effect.map(
    ctx.modelStep({
      model: strategy.summarizeWithModel,
      messages: [
        { role: "system", content: strategy.instructions },
        {
          role: "user",
          content: [
            `The agent's task:\n${clip(options.task, strategy.maxCharsPerMessage)}`,
            `Summary so far:\n${options.previous ?? "(none yet)"}`,
            `Events to fold in:\n${transcript(options.messages, strategy.maxCharsPerMessage)}`
          ].join("\n\n")
        }
      ],
      tools: [],
      maxOutputTokens: strategy.summaryMaxTokens,
      key: options.key
    }),
    (step) => ({ summary: (step.message.content ?? "").trim(), step })
  )
