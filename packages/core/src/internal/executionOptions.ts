/**
 * What an execution is given: the kernel's dependencies (`Deps`: the store, the model, the tools, the middleware, the
 * prices, the live tier) and the run's options (`ExecutionOptions`: which run, its log and head, replay or live,
 * the spend so far, the response a `resume` brings, ownership).
 */
import type * as Effect from "effect/Effect"
import type * as Errors from "../Errors.js"
import type { Event } from "../Event.js"
import type * as EventStore from "../EventStore.js"
import type { Lease } from "../Lease.js"
import type * as LiveStore from "../LiveStore.js"
import type { Interceptor } from "../Middleware.js"
import type * as ModelPort from "../ModelPort.js"
import type { Price } from "../Pricing.js"
import type * as RunNotices from "../RunNotices.js"
import type { TenantContext } from "../Tenant.js"
import type { Durability } from "../Tool.js"
import type * as ToolRegistry from "../ToolRegistry.js"
import type { Holder } from "./inFlight.js"
import type { Hub } from "./live.js"
import type * as LiveTier from "./liveTier.js"
import type { Log } from "./replayCursor.js"

export interface Deps {
  readonly store: EventStore.Service
  readonly model: ModelPort.Service
  readonly tools: ToolRegistry.Service
  readonly interceptors: ReadonlyArray<Interceptor>
  readonly auditKey: string | undefined
  /** The price of a model (see `Pricing.resolver`), or undefined when nothing prices it. */
  readonly priceOf: (model: string) => Price | undefined
  /** Output tokens the pre-call estimate assumes when a request sets none. */
  readonly defaultMaxOutputTokens: number
  /** False only when the kernel was built with `enforceBudget: false`: calls are priced but never refused. */
  readonly enforceBudget: boolean
  /**
   * Where each model call's estimate is held while it is in flight, counted by every pre-call check of its lineage
   * (`inFlight.ts`): in the store when it has `BudgetHolds` (every process's calls), else in this kernel's memory.
   */
  readonly budgetHolds: Holder
  /** How an idempotent tool that does not say is logged. */
  readonly idempotentToolDurability: Durability
  /** How often a `ctx.waitForSignal` reads the run's log for new signals (default `Signals.DEFAULT_POLL_MILLIS`). */
  readonly signalPollMillis?: number | undefined
  /** How long a `ctx.waitForSignal` waits in its process before it pauses the run (default 0: it pauses at once). */
  readonly signalHoldMillis?: number | undefined
  /**
   * Where streamed calls keep their deltas while the run is live, the wake-up of this process's readers, and the wait
   * until every delta kept is in the shared store (before the call's events are appended: a reader in another process
   * must find a call's deltas before the events after them).
   */
  readonly live: {
    readonly store: LiveStore.Service
    readonly hub: Hub
    readonly flushed: Effect.Effect<void>
    readonly keep: LiveTier.Tier["keep"]
    readonly kept: LiveTier.Tier["kept"]
  }
  /** Notices of writes to runs from other processes (`RunNotices`), when the kernel was given them. */
  readonly notices?: RunNotices.Service | undefined
}

/** The response a `resume` brings for a run's open pause: its payload, and who gave it (`ResumeOptions.respondedBy`). */
export interface Response {
  readonly payload: unknown
  readonly by?: string | undefined
}

export interface ExecutionOptions {
  readonly runId: string
  readonly rootRunId: string
  readonly tenant: TenantContext
  /** The run's log, read a page at a time as the code asks for steps (absent: a new run). */
  readonly log?: Log | undefined
  /** Events of a run's log that this execution does not replay but knows (its signals): a successor's first batch. */
  readonly written?: ReadonlyArray<Event> | undefined
  /** The run's head (its record's): appends follow it. Absent: a new run. */
  readonly head?: { readonly seq: number; readonly hash: string } | undefined
  /**
   * Why this execution takes the run over, when it must claim it first: a `RunResumed` is appended once the whole log
   * was read (and verified), before anything runs live.
   */
  readonly resumed?: string | undefined
  /** "replay": no step may run live and nothing is written. */
  readonly mode: "live" | "replay"
  /** USD spent by the run's lineage before this execution. */
  readonly spentUsd: number
  /**
   * Reads the lineage's spend again. Sub-runs (an agent's sub-agent, runs started beside this one) spend on the root's
   * budget while this execution runs, so the spend is re-read before every model call.
   */
  readonly lineageSpend?: Effect.Effect<number, Errors.StoreError> | undefined
  /** The response a `resume` brings for the open pause, and who gave it. */
  readonly response?: Response | undefined
  // --- ownership (fencing): see `ownership.ts`.
  /** The owner epoch this execution writes with (the fencing token its tool handlers get). */
  readonly ownerEpoch: number
  /** The first batch this execution appends claims the run for `ownerEpoch` (an execution of an existing run). */
  readonly claim?: boolean | undefined
  /** The caller's hold on the run (a worker's lease), checked before each handler starts. */
  readonly lease?: Lease | undefined
}
