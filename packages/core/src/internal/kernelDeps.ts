/**
 * The kernel's ports, gathered once when it is built, as the `Execution.Deps` every execution runs with: the store
 * (every append wakes this process's live readers of the run, and tells other processes' when the store needs it),
 * where streamed calls keep their deltas, the model, the tools, the middleware's interceptors and the pricing. Beside
 * them, the queue whose tasks drive runs (when the kernel shares its store with one) and the services workflow code
 * runs with.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import * as BudgetHolds from "../BudgetHolds.js"
import * as EventStore from "../EventStore.js"
import type { Options } from "../Kernel.js"
import * as LiveStore from "../LiveStore.js"
import { Middleware } from "../Middleware.js"
import { ModelPort } from "../ModelPort.js"
import * as Pricing from "../Pricing.js"
import * as RunNotices from "../RunNotices.js"
import { TaskQueue } from "../TaskQueue.js"
import { ToolRegistry } from "../ToolRegistry.js"
import type * as Execution from "./execution.js"
import * as InFlight from "./inFlight.js"
import * as LiveRead from "./live.js"
import * as LiveNotify from "./liveNotify.js"
import * as LiveTier from "./liveTier.js"

/** How long a model call's estimate stays held in the store when nothing releases it (`Kernel.Options.budgetHoldTtl`). */
export const DEFAULT_HOLD_TTL = "15 minutes"

/** The kernel's ports from the context, and `options`' settings, as its executions use them. */
export const make = (options: Options) =>
  Effect.gen(function*() {
    // Notices of this process's writes for other processes' live readers (PostgreSQL: NOTIFY), when the store needs them.
    const tells = yield* LiveNotify.make(Option.getOrUndefined(yield* Effect.serviceOption(RunNotices.RunNotices)))
    // Every append wakes this process's live readers of the run.
    const hub = LiveRead.makeHub()
    const store = LiveRead.notifying(yield* EventStore.EventStore, hub, tells.appended)
    // Deltas of streamed calls: this process's memory, written behind to the store given (shared by processes).
    const tier = yield* Effect.flatMap(Effect.serviceOption(LiveStore.LiveStore), Option.match({ onNone: () => LiveTier.memoryOnly, onSome: (shared) => LiveTier.make(shared, tells.written) }))
    const liveStore = tier.store
    const model = yield* ModelPort
    const tools = yield* ToolRegistry
    const middleware = yield* Effect.serviceOption(Middleware)
    // The queue whose tasks drive runs, when the kernel shares its store: `reconcile` asks it whether a worker holds one.
    const queue = yield* Effect.serviceOption(TaskQueue)
    // Notices of writes to runs across processes (PostgreSQL: LISTEN/NOTIFY), when the store gives them.
    const notices = Option.getOrUndefined(yield* Effect.serviceOption(RunNotices.RunNotices))
    // Model calls' estimates held in the store, seen by every process on it (SQL stores), when it gives them.
    const holds = yield* Effect.serviceOption(BudgetHolds.BudgetHolds)
    // The services the kernel was built with, and the kernel itself: workflow code runs with them, so a workflow that
    // needs one (an agent: the kernel, the model, its memory) reads it at run time and stays a plain value.
    // Not the span or scope current while the kernel was built: each run's code nests under its own caller's span.
    const built = Context.omit(Tracer.ParentSpan, Scope.Scope)(yield* Effect.context<never>())
    const deps: Execution.Deps = {
      store,
      model,
      tools,
      interceptors: Option.match(middleware, { onNone: () => [], onSome: (m) => m.interceptors }),
      auditKey: options.auditKey === undefined ? undefined : Redacted.value(options.auditKey),
      priceOf: Pricing.resolver(options, model.prices),
      defaultMaxOutputTokens: options.defaultMaxOutputTokens ?? 1024,
      enforceBudget: options.enforceBudget ?? true,
      budgetHolds: Option.match(holds, {
        onNone: () => InFlight.inMemory(InFlight.make()),
        onSome: (h) => InFlight.shared(h, Duration.toMillis(Duration.decode(options.budgetHoldTtl ?? DEFAULT_HOLD_TTL)))
      }),
      idempotentToolDurability: options.idempotentToolDurability ?? "two-phase",
      signalPollMillis: options.signalPollInterval === undefined ? undefined : Duration.toMillis(Duration.decode(options.signalPollInterval)),
      signalHoldMillis: options.signalWaitHold === undefined ? undefined : Duration.toMillis(Duration.decode(options.signalWaitHold)),
      live: { store: liveStore, hub, flushed: tier.flushed, keep: tier.keep, kept: tier.kept },
      notices
    }
    return { deps, queue, built }
  })
