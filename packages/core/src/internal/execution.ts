/**
 * One execution of a run: the code walks the log (pulled a page at a time); recorded steps return their logged results, new
 * steps run live and are appended. This module only composes the parts: the replay cursor, the ledger
 * (hash-chained, fenced append), ownership, the model and tool steps, the chat loop and the workflow's own steps.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Supervisor from "effect/Supervisor"
import type { WorkflowContext } from "../Workflow.js"
import * as Calls from "./calls.js"
import type { Deps, ExecutionOptions } from "./executionOptions.js"
import * as Ledger from "./ledger.js"
import * as ModelStep from "./modelStep.js"
import * as Ownership from "./ownership.js"
import * as Patches from "./patches.js"
import * as ReplayCursor from "./replayCursor.js"
import * as Signals from "./signals.js"
import * as SignalWait from "./signalWait.js"
import * as StepEnv from "./stepEnv.js"
import * as ToolStep from "./toolStep.js"
import * as WorkflowSteps from "./workflowSteps.js"

export type { Deps, ExecutionOptions } from "./executionOptions.js"
export type { Fault, Halt } from "./stepEnv.js"

export const make = (deps: Deps, options: ExecutionOptions) => {
  const { runId, tenant, mode } = options
  const ownership = Ownership.make(runId, options.ownerEpoch, options.lease)
  // The signals in the run's log (and those senders append while it runs) that no wait took yet.
  const inbox = Signals.makeInbox()
  const ledger = Ledger.make({
    store: deps.store,
    auditKey: deps.auditKey,
    runId,
    tenantId: tenant.tenantId,
    head: options.head,
    mode,
    ownerEpoch: options.ownerEpoch,
    claim: options.claim === true,
    resumed: options.resumed,
    onRefused: ownership.lose,
    lostAt: (now) => ownership.lostAt("(the claim of the run)", now),
    onSignals: inbox.add
  })
  const { log } = options
  // A run taken over is claimed once its whole log was read and verified, before anything runs live (a live step,
  // an in-doubt call run again, a response logged): of two processes resuming it at once, the second fails there.
  if (log !== undefined) inbox.add(log.first)
  if (options.written !== undefined) inbox.add(options.written)
  const claimed: ReplayCursor.Log | undefined = log === undefined ? log : {
    first: log.first,
    next: Effect.tap(log.next, (page) => (Option.isNone(page) ? ledger.claim() : Effect.sync(() => inbox.add(page.value))))
  }
  // The fibers the workflow's code forked (its concurrent branches) still alive: with none but the asking one, a new
  // step met while logged steps are unconsumed has nobody to wait for (`replayCursor.ts`).
  const branches = new Branches()
  const othersAlive = () => {
    const current = Option.getOrUndefined(Fiber.getCurrentFiber())
    if (branches.main !== undefined && branches.main !== current) return true
    for (const fiber of branches.alive) if (fiber !== current) return true
    return false
  }
  const cursor = ReplayCursor.make(runId, claimed, mode, othersAlive)
  const env = StepEnv.make(deps, options, cursor, ledger, ownership, () => branches.alive.size > 0)
  const calls = Calls.make(env, ModelStep.make(env), ToolStep.make(env))
  const steps = WorkflowSteps.make(env, options.response)

  const waitForSignal = SignalWait.make(env, inbox, ledger.catchUp, {
    pollMillis: deps.signalPollMillis ?? Signals.DEFAULT_POLL_MILLIS,
    holdMillis: deps.signalHoldMillis ?? 0
  })

  const context: WorkflowContext = { runId, tenant, ...calls, ...steps, waitForSignal, ...Patches.make(env) }

  return {
    context,
    /** Runs the workflow's code, its fiber known as the main one while it runs (and its forked ones supervised). */
    runCode: <A, E>(code: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.supervised(
        Effect.ensuring(
          Effect.zipRight(Effect.sync(() => void (branches.main = Option.getOrUndefined(Fiber.getCurrentFiber()))), code),
          Effect.sync(() => void (branches.main = undefined))
        ),
        branches
      ),
    /** Appends after the current head; fails with the store's error (used for a run's final events). */
    appendOrFail: ledger.append,
    /** The signals in the run's log (or adopted since) no wait took: what a handover carries to the successor. */
    untakenSignals: inbox.untaken,
    halted: env.halted,
    head: ledger.head,
    spentUsd: env.spentUsd,
    /** The first step the log holds that the code did not ask for (reading the rest of the log), or undefined. */
    unconsumed: cursor.unconsumed,
    /** Reads the rest of the log for a handover (its signals reach the inbox); a step the code skipped, or undefined. */
    skippedAtHandover: cursor.skippedAtHandover
  }
}

export type Execution = ReturnType<typeof make>

/** Tracks the fibers forked under it while they are alive. */
class Branches extends Supervisor.AbstractSupervisor<void> {
  readonly alive = new Set<Fiber.RuntimeFiber<unknown, unknown>>()
  /** The fiber the workflow's code started on, while it runs (not a forked one). */
  main: Fiber.RuntimeFiber<unknown, unknown> | undefined = undefined
  value = Effect.void
  override onStart<A, E, R>(
    _context: Context.Context<R>,
    _effect: Effect.Effect<A, E, R>,
    _parent: Option.Option<Fiber.RuntimeFiber<unknown, unknown>>,
    fiber: Fiber.RuntimeFiber<A, E>
  ): void {
    this.alive.add(fiber)
  }
  override onEnd<A, E>(_value: Exit.Exit<A, E>, fiber: Fiber.RuntimeFiber<A, E>): void {
    this.alive.delete(fiber)
  }
}
