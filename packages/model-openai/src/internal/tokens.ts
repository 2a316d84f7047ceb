/**
 * Token counting with `gpt-tokenizer`, in OpenAI's chat format. An encoding's rank table is megabytes of
 * JavaScript, so each one is imported on first use (dynamic `import()`), and only the one a model needs.
 */
import type { Chat } from "@artana/core"
import * as Effect from "effect/Effect"

/** The BPE encodings this adapter counts with. */
export type Encoding = "o200k_base" | "cl100k_base"

// Provider prefixes (OpenRouter's "openai/gpt-4o") and fine-tune names ("ft:gpt-4o-mini:org::id") name a base model.
const baseName = (model: string): string => {
  const lower = model.toLowerCase().trim()
  const withoutFineTune = lower.startsWith("ft:") ? lower.slice(3) : lower
  const slash = withoutFineTune.lastIndexOf("/")
  return slash === -1 ? withoutFineTune : withoutFineTune.slice(slash + 1)
}

const O200K = /^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o1|o3|o4|gpt-oss|codex)/
const CL100K = /^(gpt-4|gpt-3\.5|gpt-35)/

/**
 * The encoding of `model`: o200k_base for the gpt-4o / 4.1 / 4.5 / 5 and o-series families, cl100k_base for
 * gpt-4 and gpt-3.5. Any other model (a local Llama, Qwen, Mistral...) is counted with o200k_base: an estimate,
 * since those models have tokenizers of their own, but a large modern vocabulary is the closest stand-in.
 */
export const encodingFor = (model: string): { readonly encoding: Encoding; readonly known: boolean } => {
  const name = baseName(model)
  if (O200K.test(name)) return { encoding: "o200k_base", known: true }
  if (CL100K.test(name)) return { encoding: "cl100k_base", known: true }
  return { encoding: "o200k_base", known: false }
}

type Counter = (text: string) => number

// Special-token text ("<|endoftext|>") in a message is counted as ordinary text, as the API treats it.
const options = { disallowedSpecial: new Set<string>() }

const load = (encoding: Encoding): Effect.Effect<Counter> =>
  Effect.promise(async (): Promise<Counter> => {
    const tokenizer = encoding === "o200k_base"
      ? await import("gpt-tokenizer/encoding/o200k_base")
      : await import("gpt-tokenizer/encoding/cl100k_base")
    return (text) => (text.length === 0 ? 0 : tokenizer.countTokens(text, options))
  })

// OpenAI's documented chat overhead (the "How to count tokens with tiktoken" cookbook): every message costs
// 3 tokens of framing, and the reply is primed with 3 more (<|start|>assistant<|message|>).
const TOKENS_PER_MESSAGE = 3
const REPLY_PRIMING = 3

/** Tokens of a message list for `model`, as the chat format frames it. */
export const countMessages = (messages: ReadonlyArray<Chat.ChatMessage>, model: string): Effect.Effect<number> =>
  Effect.map(load(encodingFor(model).encoding), (count) => {
    let total = REPLY_PRIMING
    for (const message of messages) {
      total += TOKENS_PER_MESSAGE + count(message.role) + count(message.content ?? "")
      if (message.role === "assistant") {
        for (const call of message.toolCalls ?? []) total += count(call.name) + count(call.arguments)
      }
    }
    return total
  })

/** Tokens of plain text for `model` (used to estimate the usage of servers that report none). */
export const countText = (text: string, model: string): Effect.Effect<number> =>
  Effect.map(load(encodingFor(model).encoding), (count) => count(text))
