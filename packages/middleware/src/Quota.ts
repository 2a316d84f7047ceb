/**
 * Quota: prices every model call and holds the tenant's USD budget across a run's lineage.
 *
 * - before a call: estimates its cost (the prompt's tokens by the ModelPort's tokenizer, plus the request's
 *   `maxOutputTokens` or `defaultMaxOutputTokens` as output) and refuses it with `BudgetExceeded` when the
 *   lineage's spend plus the estimate would cross `budgetUsdLimit`;
 * - after a call: sets the response's `costUsd` from its usage and the price table (cached input tokens at
 *   the cached price) and notes the spend in the log; the kernel adds it up and fails the run once the limit
 *   is crossed.
 *
 * A model with no price is refused (`PolicyDenied`, naming the model and how to price it) unless
 * `unknownModelPrice` is given: a call is never silently free.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Errors, type Middleware, ModelPort } from "@artana/core"
import { openAiPrices } from "./prices.js"

/** USD per million tokens. */
export const Price = Schema.Struct({
  input: Schema.Number.pipe(Schema.nonNegative()),
  cachedInput: Schema.Number.pipe(Schema.nonNegative()),
  output: Schema.Number.pipe(Schema.nonNegative())
})
export type Price = typeof Price.Type

export interface Options {
  /** Prices to add or override (merged over the built-in OpenAI table). */
  readonly prices?: Readonly<Record<string, Price>> | undefined
  /** The price of models absent from the table; without it such calls are refused. */
  readonly unknownModelPrice?: Price | undefined
  /** Output tokens assumed by the pre-check when a request sets no `maxOutputTokens`. Default 1024. */
  readonly defaultMaxOutputTokens?: number | undefined
}

/** The price of `model`: exact name, else the longest table name it starts with (dated snapshots). */
export const priceOf = (model: string, table: Readonly<Record<string, Price>>): Price | undefined => {
  const exact = table[model]
  if (exact !== undefined) return exact
  let best: string | undefined
  for (const name of Object.keys(table)) {
    if (model.startsWith(`${name}-`) && (best === undefined || name.length > best.length)) best = name
  }
  return best === undefined ? undefined : table[best]
}

/** Cost in USD of a call's usage at `price`. */
export const costOf = (usage: { readonly inputTokens: number; readonly outputTokens: number; readonly cachedInputTokens?: number | undefined }, price: Price): number => {
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens)
  return ((usage.inputTokens - cached) * price.input + cached * price.cachedInput + usage.outputTokens * price.output) / 1_000_000
}

const NAME = "quota"

/**
 * The quota middleware; needs the `ModelPort` (for its tokenizer).
 *
 * @example
 * Middleware.layer([Pii.middleware(), Quota.middleware({ prices: { "my-model": { input: 1, cachedInput: 1, output: 2 } } }), CapabilityGuard.middleware()])
 */
export const middleware = (options: Options = {}): Effect.Effect<Middleware.Interceptor, never, ModelPort.ModelPort> =>
  Effect.map(ModelPort.ModelPort, (model) => {
    const table: Readonly<Record<string, Price>> = { ...openAiPrices, ...options.prices }
    const price = (name: string) => priceOf(name, table) ?? options.unknownModelPrice
    const unpriced = (name: string) =>
      new Errors.PolicyDenied({
        tool: "model",
        reason: `no price is known for model "${name}", so its cost cannot be held to the budget; price it with ` +
          `Quota.middleware({ prices: { "${name}": { input, cachedInput, output } } }) (USD per million tokens) or set unknownModelPrice`
      })
    return {
      name: NAME,
      beforeModel: (request, ctx) =>
        Effect.gen(function*() {
          const p = price(request.model)
          if (p === undefined) return yield* Effect.fail(unpriced(request.model))
          const promptTokens = yield* model.countTokens(request.messages, request.model)
          const estimate = costOf({ inputTokens: promptTokens, outputTokens: request.maxOutputTokens ?? options.defaultMaxOutputTokens ?? 1024 }, p)
          if (ctx.spentUsd + estimate > ctx.tenant.budgetUsdLimit) {
            yield* ctx.note(NAME, "estimate_over_budget", { model: request.model, promptTokens, estimateUsd: estimate, spentUsd: ctx.spentUsd, limitUsd: ctx.tenant.budgetUsdLimit })
            return yield* Effect.fail(new Errors.BudgetExceeded({ runId: ctx.runId, limitUsd: ctx.tenant.budgetUsdLimit, spentUsd: ctx.spentUsd }))
          }
          return request
        }),
      afterModel: (request, response, ctx) =>
        Effect.gen(function*() {
          const p = price(response.model) ?? price(request.model)
          if (p === undefined) return yield* Effect.fail(unpriced(response.model))
          const costUsd = costOf(response.usage, p)
          yield* ctx.note(NAME, "spend", {
            model: response.model,
            inputTokens: response.usage.inputTokens,
            cachedInputTokens: response.usage.cachedInputTokens ?? 0,
            outputTokens: response.usage.outputTokens,
            costUsd,
            spentUsd: ctx.spentUsd + costUsd,
            limitUsd: ctx.tenant.budgetUsdLimit
          })
          return { ...response, costUsd }
        })
    }
  })
