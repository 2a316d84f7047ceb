/**
 * A model call against the lineage's budget: refused before it is sent when nothing prices its model or its estimate
 * (the prompt as the model counts it, and every output token the request allows) would pass the limit; stopped
 * while it streams past what was estimated; charged, once answered, what it cost.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { assistant, Usage } from "../Chat.js"
import * as Errors from "../Errors.js"
import type { EventPayload } from "../Event.js"
import type * as ModelPort from "../ModelPort.js"
import { costOf, type Price } from "../Pricing.js"
import * as CallHolds from "./callHolds.js"
import type { StepEnv } from "./stepEnv.js"

/** `ModelFailed.kind` of a call refused because nothing prices its model. */
export const UNPRICED = "budget_unpriced"

/**
 * The price a call's estimate, its hold and its stream's stop are made at: the dearest, rate by rate, of the models it
 * may end at (`ModelPort.Service.answeredBy`: a fallback's later models), so a call a pricier model answers stays
 * within what was held. A model nothing prices counts at `price`, the price it is charged at. When each of them may
 * bill the call (`billsEach`: a fallback that hands on a billed, refused reply), the sum of their prices. Undefined:
 * unpriced.
 */
export const estimatePrice = (env: StepEnv, model: string, price: Price | undefined): Price | undefined => {
  const models = price === undefined ? undefined : env.deps.model.answeredBy?.(model)
  if (price === undefined || models === undefined) return price
  if (env.deps.model.billsEach?.(model) === true) {
    // Each model of the chain may bill the call (a refused reply is charged with the answer): it may cost them all.
    let sum = { input: 0, cachedInput: 0, output: 0 }
    for (const m of models.includes(model) ? models : [model, ...models]) {
      const p = env.deps.priceOf(m) ?? price
      sum = { input: sum.input + p.input, cachedInput: sum.cachedInput + p.cachedInput, output: sum.output + p.output }
    }
    return sum
  }
  let dearest = price
  for (const m of models) {
    const p = env.deps.priceOf(m) ?? price
    dearest = { input: Math.max(dearest.input, p.input), cachedInput: Math.max(dearest.cachedInput, p.cachedInput), output: Math.max(dearest.output, p.output) }
  }
  return dearest
}

/** Ends the execution: the run fails on its budget. */
export const failed = (env: StepEnv, error: Errors.BudgetExceeded | Errors.BudgetUnpriced) => env.halt({ _tag: "Failed", error })

/**
 * What a call's estimate assumed: the prompt's tokens, and the output tokens sent as the model's cap; and the release
 * of the estimate, held for the lineage while the call is in flight (`inFlight.ts`).
 */
export interface Assumed {
  readonly promptTokens: number
  readonly outputTokens: number
  readonly release: Effect.Effect<void>
  /** The lineage's spend and its other calls' holds when this call's estimate was held (`Held.baseUsd`). */
  readonly baseUsd: number
  /** What the call holds beyond its first hold: a re-ask's, a stream's past its hold (`callHolds.ts`). */
  readonly holds: CallHolds.CallHolds
}

/**
 * Refuses a call the budget cannot hold (by its price, or its estimate with the lineage's spend and its other calls in
 * flight in this kernel); notes what the kernel decided. Returns the tokens the estimate assumed, when it made one,
 * and the estimate is then held for the lineage until `release` (the check and the hold are one synchronous step).
 */
export const checkBudget = (
  env: StepEnv,
  key: string,
  sent: ModelPort.ModelRequest,
  price: Price | undefined,
  requested: EventPayload,
  notes: Array<EventPayload>,
  /** Where the token count may be interrupted (the caller holds the rest uninterruptible: see `modelStep.ts`). */
  interruptible: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = (effect) => effect
) =>
  Effect.gen(function*() {
    const { deps, tenant } = env
    if (!deps.enforceBudget) {
      notes.push({ _tag: "MiddlewareNote", middleware: "kernel", note: "budget_not_enforced", data: { limitUsd: tenant.budgetUsdLimit } })
      return
    }
    if (price === undefined) {
      // Refused before the request: a call that cannot be priced is never treated as free.
      yield* env.append(key, [requested, ...notes, { _tag: "ModelFailed", kind: UNPRICED, error: `no price is known for model "${sent.model}"` }])
      return yield* failed(env, new Errors.BudgetUnpriced({ runId: env.runId, model: sent.model }))
    }
    if (!(price.input > 0 || price.output > 0)) return
    // The call's cost at most: the prompt as the model counts it, and every output token the request allows.
    const promptTokens = yield* interruptible(deps.model.countTokens(sent.messages, sent.model))
    const outputTokens = sent.maxOutputTokens ?? deps.defaultMaxOutputTokens
    // A count the tokenizer cannot give is priced at the whole budget: refused, not waved through.
    const estimateUsd = costOf({ inputTokens: promptTokens, outputTokens }, price) ?? Number.POSITIVE_INFINITY
    const holds = deps.budgetHolds
    const ask = holds.hold({
      tenantId: tenant.tenantId,
      rootRunId: env.options.rootRunId,
      runId: env.runId,
      stepKey: key,
      usd: estimateUsd,
      limitUsd: tenant.budgetUsdLimit,
      spentUsd: env.spentUsd()
    })
    const held = yield* Effect.catchAll(holds.lapses ? interruptible(ask) : ask, env.fault)
    if ("release" in held) {
      const holds = CallHolds.make(env, key, price, estimateUsd, held, yield* Effect.runtime<never>())
      return { outputTokens, promptTokens, release: holds.release, baseUsd: held.baseUsd, holds } satisfies Assumed
    }
    const { spentUsd, heldUsd: inFlightUsd } = held
    notes.push({
      _tag: "MiddlewareNote",
      middleware: "kernel",
      note: "estimate_over_budget",
      data: {
        model: sent.model,
        promptTokens,
        outputTokens,
        estimateUsd: Number.isFinite(estimateUsd) ? estimateUsd : null,
        spentUsd,
        ...(inFlightUsd > 0 ? { inFlightUsd } : {}),
        limitUsd: tenant.budgetUsdLimit
      }
    })
    return yield* env.budgetExceeded(key, "before_call", [requested, ...notes])
  })

/**
 * A streamed reply's check, as its output comes: a server may stream past the cap, so the output so far (4 characters
 * a token) is priced, and its cost returned once the spend would pass the limit, or so would the spend and holds its
 * estimate was held beside (`Assumed.baseUsd`; undefined: go on). The cost grows with the output, so the most output tokens the budget allows is worked out once (again only when the run's spend
 * changed): a delta costs a comparison, not a pricing.
 */
export const overBudgetOf = (
  env: StepEnv,
  assumed: Assumed | undefined,
  price: Price | undefined,
  /** The model streaming: its tokenizer counts the output when the stream is refused room past its hold. */
  model: string
): (outputChars: number, outputText: () => string) => number | undefined => {
  if (assumed === undefined || price === undefined) return () => undefined
  const limit = env.tenant.budgetUsdLimit
  // The room held for the lineage's other calls in flight when this one's was (every process's, on a store that holds
  // them) is theirs: measured then, so a sibling that has ended since (its cost now in the spend) counts once.
  const costAt = (outputTokens: number): number => costOf({ inputTokens: assumed.promptTokens, outputTokens }, price) ?? Number.POSITIVE_INFINITY
  /** The most output tokens within the budget after `spent` (-1: not even none). */
  const allowance = (spent: number): number => {
    const within = (tokens: number) => !(spent + costAt(tokens) > limit) && !(assumed.baseUsd + costAt(tokens) > limit)
    if (!within(0)) return -1
    const perToken = price.output / 1_000_000
    const guess = perToken > 0 ? Math.floor((limit - spent - costAt(0)) / perToken) : Number.MAX_SAFE_INTEGER
    return lastWithin(within, Math.max(0, Math.min(Number.MAX_SAFE_INTEGER, Number.isFinite(guess) ? guess : 0)))
  }
  let spentAt = env.spentUsd()
  let allowed = allowance(spentAt)
  // The most output tokens what is held for the call covers (again only when that changed): past them, the stream
  // asks for more room, and is stopped once the lineage has none (`callHolds.ts`).
  const covered = (held: number) => (costAt(0) > held ? -1 : lastWithin((tokens) => !(costAt(tokens) > held), Math.max(0, assumed.outputTokens)))
  let heldAt = assumed.holds.heldUsd()
  let coveredTokens = covered(heldAt)
  // The output's tokens: 4 characters a token past the last count the model's tokenizer made of it (`within`).
  let countedChars = 0
  let countedTokens = 0
  /** Whether the output so far (`chars` of `text`), counted by the tokenizer, is within what is held for the call. */
  const count = (text: string) => env.deps.model.countTokens([assistant(text)], model)
  const within = (chars: number, text: () => string) => () =>
    // The text's own tokens: a message's count less an empty one's (the chat format's tokens around a message).
    Effect.map(Effect.zipWith(Effect.suspend(() => count(text())), count(""), (all, frame) => Math.max(0, all - frame)), (tokens) => {
      if (costAt(tokens) > assumed.holds.heldUsd()) return false
      if (chars > countedChars) {
        countedChars = chars
        countedTokens = tokens
      }
      return true
    })
  return (outputChars, outputText) => {
    const spent = env.spentUsd()
    if (spent !== spentAt) {
      spentAt = spent
      allowed = allowance(spent)
    }
    const tokens = countedTokens + Math.ceil((outputChars - countedChars) / 4)
    if (tokens > allowed) return costAt(tokens)
    if (tokens <= coveredTokens) return undefined
    const cost = costAt(tokens)
    if (!assumed.holds.covers(cost, within(outputChars, outputText))) return cost
    if (assumed.holds.heldUsd() !== heldAt) {
      heldAt = assumed.holds.heldUsd()
      coveredTokens = covered(heldAt)
    }
    return undefined
  }
}

/**
 * The last count from 0 to `Number.MAX_SAFE_INTEGER` that `within` holds for (it holds for 0, and for every count below
 * one it holds for), looked for from `guess`: two calls when the guess is right or one off, a bisection else.
 */
export const lastWithin = (within: (n: number) => boolean, guess: number): number => {
  let lo = 0
  let hi = Number.MAX_SAFE_INTEGER + 1
  if (within(guess)) {
    if (guess === Number.MAX_SAFE_INTEGER || !within(guess + 1)) return guess
    lo = guess + 1
  } else {
    if (within(guess - 1)) return guess - 1
    hi = guess - 1
  }
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2)
    if (within(mid)) lo = mid
    else hi = mid
  }
  return lo
}

/** The cost a response is charged: the adapter's (or a middleware's) when it is one, else its usage at its price. */
export const chargedCost = (env: StepEnv, sent: ModelPort.ModelRequest, response: ModelPort.ModelResponse, price: Price | undefined): number | undefined => {
  // A cost the adapter reports wins when it is one (a finite, non-negative number); else the usage at the price of
  // the model that answered. Anything else (a negative or NaN cost, usage that is not a count of tokens) is no cost
  // the budget can hold: undefined, and the call is recorded as refused, like an unpriced one, and the run fails,
  // rather than a refund or a NaN switching the budget off.
  const answeredPrice = response.model === sent.model ? price : env.deps.priceOf(response.model) ?? price
  const reported = response.costUsd
  return reported !== undefined
    ? (Number.isFinite(reported) && reported >= 0 ? reported : undefined)
    : answeredPrice === undefined
    ? (env.deps.enforceBudget ? undefined : 0)
    : costOf(response.usage, answeredPrice)
}

/**
 * What the models a fallback passed over billed for the call (`fallback` notes with `billed` usage: a reply a model
 * answered and the port refused), each at its own model's price, else at the price of the call's model. Undefined
 * when such usage cannot be priced under an enforced budget (the call is then refused as unpriced).
 */
export const passedOverCost = (env: StepEnv, response: ModelPort.ModelResponse, price: Price | undefined): number | undefined => {
  let sum = 0
  for (const note of response.notes ?? []) {
    const passed = note.source === "fallback" ? decodePassedOver(note.data) : Option.none()
    if (Option.isNone(passed)) continue
    const at = env.deps.priceOf(passed.value.from) ?? price
    const cost = at === undefined ? (env.deps.enforceBudget ? undefined : 0) : costOf(passed.value.billed, at)
    if (cost === undefined) return undefined
    sum += cost
  }
  return sum
}

/** A `fallback` note's model and what it billed. */
const decodePassedOver = Schema.decodeUnknownOption(Schema.Struct({ from: Schema.String, billed: Usage }))
