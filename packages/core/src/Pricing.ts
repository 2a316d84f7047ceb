/**
 * Prices of models, in USD per million tokens, and the cost of a call's usage. The kernel prices every model step
 * with them and holds the tenant's budget (see `Kernel.Options`): a model with no price under a budget is refused
 * before the request, never treated as free.
 *
 * Where a price comes from, first match wins: the deployment's `prices` (`Kernel.Options.prices`), the model
 * adapter's own table (`ModelPort.Service.prices`), the built-in table below, then the deployment's
 * `unknownModelPrice`. A cost the adapter reports in its response (`ModelResponse.costUsd`) is used as it is.
 *
 * @since 0.2.0
 */
import * as Schema from "effect/Schema"
import type { Usage } from "./Chat.js"

/** USD per million tokens: input, cached input and output. */
const Rate = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())
export const Price = Schema.Struct({ input: Rate, cachedInput: Rate, output: Rate })
export type Price = typeof Price.Type

/** Model name -> price. A dated snapshot (`gpt-4o-2024-08-06`) is priced as its family (the longest matching name). */
export type PriceTable = Readonly<Record<string, Price>>

/** A model that costs nothing (a local model, a test double): say so in code, `prices: { "llama3": Pricing.free }`. */
export const free: Price = { input: 0, cachedInput: 0, output: 0 }

/**
 * Built-in prices: OpenAI's current models (input / cached input / output, from OpenAI's public price list).
 * Override or extend them per deployment with `Kernel.Options.prices`.
 */
export const builtIn: PriceTable = {
  "gpt-5": { input: 1.25, cachedInput: 0.125, output: 10 },
  "gpt-5-mini": { input: 0.25, cachedInput: 0.025, output: 2 },
  "gpt-5-nano": { input: 0.05, cachedInput: 0.005, output: 0.4 },
  "gpt-4.1": { input: 2, cachedInput: 0.5, output: 8 },
  "gpt-4.1-mini": { input: 0.4, cachedInput: 0.1, output: 1.6 },
  "gpt-4.1-nano": { input: 0.1, cachedInput: 0.025, output: 0.4 },
  "gpt-4o": { input: 2.5, cachedInput: 1.25, output: 10 },
  "gpt-4o-mini": { input: 0.15, cachedInput: 0.075, output: 0.6 },
  "o1": { input: 15, cachedInput: 7.5, output: 60 },
  "o3": { input: 2, cachedInput: 0.5, output: 8 },
  "o3-mini": { input: 1.1, cachedInput: 0.55, output: 4.4 },
  "o4-mini": { input: 1.1, cachedInput: 0.275, output: 4.4 },
  "gpt-4-turbo": { input: 10, cachedInput: 10, output: 30 },
  "gpt-3.5-turbo": { input: 0.5, cachedInput: 0.5, output: 1.5 }
}

/** A dated snapshot's suffix: `-2024-08-06`, Anthropic's `-20250929`, or the older `-0613`/`-0125`. */
const SNAPSHOT = /^-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4})$/

/** A usable price: every rate a finite, non-negative number (a `NaN` from a misread setting is no price at all). */
const isPrice = Schema.is(Price)

/**
 * The price of `model` in `table`: its exact name, else its family's when `model` is a dated snapshot of it
 * (`gpt-4o-2024-08-06` is priced as `gpt-4o`, `claude-sonnet-4-5-20250929` as `claude-sonnet-4-5`). Only the table's
 * own entries count (a model named `constructor` has no price), only valid prices count, and another model whose name
 * merely starts with a priced one (`o1-pro`, which costs ten times `o1`) has none.
 */
export const priceOf = (model: string, table: PriceTable): Price | undefined => {
  const own = (name: string): Price | undefined => {
    if (!Object.hasOwn(table, name)) return undefined
    const price: unknown = table[name]
    return isPrice(price) ? price : undefined
  }
  const exact = own(model)
  if (exact !== undefined) return exact
  for (const name of Object.keys(table)) {
    if (model.startsWith(`${name}-`) && SNAPSHOT.test(model.slice(name.length))) return own(name)
  }
  return undefined
}

/**
 * Cost in USD of a call's usage at `price` (cached input tokens at the cached price); `undefined` when the usage is
 * not a count of tokens (negative, fractional or not a number), which the kernel refuses rather than trusts.
 */
export const costOf = (usage: Usage, price: Price): number | undefined => {
  const counts = [usage.inputTokens, usage.outputTokens, usage.cachedInputTokens ?? 0]
  if (!counts.every((n) => Number.isSafeInteger(n) && n >= 0)) return undefined
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens)
  return ((usage.inputTokens - cached) * price.input + cached * price.cachedInput + usage.outputTokens * price.output) / 1_000_000
}

/** How a deployment prices models; every field optional. */
export interface Options {
  /** Prices that win over the adapter's and the built-in ones. */
  readonly prices?: PriceTable | undefined
  /** The price of a model no table knows; without it, such a model is refused under a budget. */
  readonly unknownModelPrice?: Price | undefined
  /** Output tokens the kernel's pre-call estimate assumes when a request sets no `maxOutputTokens`. Default 1024. */
  readonly defaultMaxOutputTokens?: number | undefined
}

/** The resolver the kernel uses: deployment, then adapter, then built-in, then `unknownModelPrice` (if valid). */
export const resolver = (options: Options, adapter: PriceTable | undefined) => (model: string): Price | undefined =>
  (options.prices === undefined ? undefined : priceOf(model, options.prices)) ??
    (adapter === undefined ? undefined : priceOf(model, adapter)) ??
    priceOf(model, builtIn) ??
    (isPrice(options.unknownModelPrice) ? options.unknownModelPrice : undefined)
