/**
 * Group commit for a store with one writer (SQLite): appends that arrive together are written in one transaction,
 * one savepoint each, and each caller is answered when that transaction has committed (durable at the store's
 * `synchronous` setting), with its own outcome: a refused batch rolls back to its savepoint and fails alone.
 *
 * "Together" is one turn of the event loop: the first append of a turn schedules a flush for the turn's end
 * (`setImmediate`), and every append made before it (by the runs a previous commit answered, which continue at
 * once) joins it. One run on its own pays a turn of the loop and nothing else: a group of one is its plain append,
 * committed as before. An append inside a caller's transaction is not grouped (it commits with that transaction).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import type { SequenceConflict, StoreError } from "../Errors.js"
import type { AppendRequest } from "../EventStore.js"
import { endsSqliteTransaction, transactionDefects } from "../SqlErrors.js"
import type { AppendBatch } from "./sqlAppend.js"

type Outcome = Exit.Exit<void, SequenceConflict | StoreError | SqlError>

/** An append waiting for its group: answered with its own outcome once the group's transaction has committed. */
export interface Pending {
  readonly request: AppendRequest
  readonly conflict: () => SequenceConflict
  readonly answer: (outcome: Outcome) => void
  /**
   * Set when its caller was interrupted after its group left the turn (waiting for the connection, behind another
   * fiber's transaction): a writer leaves it out if the group's write has not begun (see `waiting`).
   */
  cancelled?: boolean
  /** Called when it is marked `cancelled`: a writer that can stop its write before it begins sets it. */
  onCancel?: () => void
}

/**
 * The appends of `group` whose callers still wait: what a writer writes when the group's write begins. An append
 * interrupted before then is not written (its caller was told nothing was); one interrupted once the write began may
 * be, as any write interrupted in flight.
 */
export const waiting = (group: ReadonlyArray<Pending>): ReadonlyArray<Pending> =>
  group.some((p) => p.cancelled === true) ? group.filter((p) => p.cancelled !== true) : group

/**
 * How long one run may go on writing at once, alone, before its next append waits for the turn's end (and the event
 * loop's I/O and timers get their turn): a tight run of steps must not hold the loop much longer than this.
 */
export const ALONE_MS = 4

/** Writes one append at once, not waiting for the turn; undefined when it cannot now (the connection is busy). */
export type WriteAlone = (request: AppendRequest, conflict: () => SequenceConflict) => Effect.Effect<void, SequenceConflict | StoreError | SqlError> | undefined

/**
 * Gathers the appends made in one turn of the event loop: the first of a turn schedules `write` for the turn's end
 * (`setImmediate`), which gets every append made before it, each to answer. An append interrupted before its group
 * is written leaves the group, and nothing of it is written: still in the turn, it is taken out; in a group waiting
 * for the connection, it is marked `cancelled`, and the writer leaves it out (`waiting`).
 *
 * With `alone`, a run that appends alone is not made to wait for the turn's end: its append is written at once (a
 * group of one is its plain append either way), saving the fiber's suspension and the loop's turn, which cost more CPU
 * than the write itself at `synchronous = NORMAL`. "Alone": no other run appended in this turn nor in the last turn that
 * had appends, nothing waits for the group, and less than `ALONE_MS` passed since the turn's first append (no time bar for the
 * turn's first; `alone` itself may still decline, e.g. while a transaction holds the connection). As soon
 * as a second run appends in a turn, every append of the next turn waits and is grouped again (what many runs at once
 * need: one commit for all of them).
 */
export const turnGroups = (write: (group: ReadonlyArray<Pending>) => void, alone?: WriteAlone) => {
  let pending: Array<Pending> = []
  // The current turn (until the flush runs): its first append's run, when that was, and whether another run appended.
  let turnRun: string | undefined
  let turnStart = 0
  let shared = false
  // Whether the last turn with appends had appends of more than one run.
  let lastShared = false
  let scheduled = false
  const flush = () => {
    const group = pending
    pending = []
    scheduled = false
    lastShared = shared
    shared = false
    turnRun = undefined
    if (group.length > 0) write(group)
  }
  const schedule = () => {
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
  /** Whether this append may be written at once (see above); notes the turn's runs either way. */
  const writesAlone = (runId: string): boolean => {
    schedule()
    if (turnRun === undefined) {
      turnRun = runId
      turnStart = performance.now()
      return !lastShared
    }
    if (turnRun !== runId) shared = true
    return !shared && !lastShared && pending.length === 0 && performance.now() - turnStart < ALONE_MS
  }
  const wait = (request: AppendRequest, conflict: () => SequenceConflict): Effect.Effect<void, SequenceConflict | StoreError | SqlError> =>
    Effect.async((resume) => {
      schedule()
      const entry: Pending = { request, conflict, answer: resume }
      pending.push(entry)
      return Effect.sync(() => {
        const at = pending.indexOf(entry)
        if (at !== -1) pending.splice(at, 1)
        else {
          entry.cancelled = true
          entry.onCancel?.()
        }
      })
    })
  /**
   * The append begun when called, for a caller that calls it as the append runs (an `AppendBatch` is): a lone run's
   * append is written right there and answered with its outcome, an `Exit`, with no effect of its own to run (three
   * nodes an append fewer than `grouped`'s `suspend`); any other waits for its group.
   */
  const now = (request: AppendRequest, conflict: () => SequenceConflict): Effect.Effect<void, SequenceConflict | StoreError | SqlError> =>
    (alone !== undefined && writesAlone(request.runId) ? alone(request, conflict) : undefined) ?? wait(request, conflict)
  const grouped = (request: AppendRequest, conflict: () => SequenceConflict): Effect.Effect<void, SequenceConflict | StoreError | SqlError> =>
    alone === undefined ? wait(request, conflict) : Effect.suspend(() => now(request, conflict))
  // The append as an effect (begun when it runs), and `now`.
  return Object.assign(grouped, { now })
}

/** `append`, grouped: appends made in one turn of the event loop share a transaction. */
export const make = (sql: SqlClient.SqlClient, append: AppendBatch): Effect.Effect<AppendBatch> =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    const runFork = Runtime.runFork(runtime)

    /**
     * One append on its own; or the group in one transaction, each in a savepoint, answered after the commit. An append
     * whose caller was interrupted before its turn to be written (`cancelled`) is left out. A failure that may have
     * ended the transaction (`SqlErrors.endsSqliteTransaction`: SQLite rolled it all back) fails the whole group, as
     * nothing of it is written: the appends after it must not run in a new transaction of their own, nor the ones
     * before it be answered as written.
     */
    const write = (group: ReadonlyArray<Pending>): Effect.Effect<void> => {
      if (group.length === 1) {
        const only = group[0]!
        return Effect.map(Effect.exit(append(only.request, only.conflict, false)), only.answer)
      }
      // The failure that ended the transaction, given to every caller: the append's own (a full disk, ...), not the
      // savepoint's rollback that then failed, nor the group's (no transaction is left to roll back).
      let ended: Cause.Cause<SequenceConflict | StoreError | SqlError> | undefined
      const each = Effect.forEach(group, (p) =>
        Effect.suspend(() => {
          if (p.cancelled === true) return Effect.succeed(undefined)
          let own: Cause.Cause<SequenceConflict | StoreError | SqlError> | undefined
          const appended = Effect.tapErrorCause(append(p.request, p.conflict, true), (cause) => Effect.sync(() => void (own = cause)))
          return Effect.flatMap(Effect.exit(sql.withTransaction(appended)), (exit) => {
            if (Exit.isSuccess(exit) || !endsSqliteTransaction(exit.cause)) return Effect.succeed(exit)
            ended = own ?? exit.cause
            return Effect.failCause(exit.cause)
          })
        }))
      return Effect.map(Effect.exit(transactionDefects(sql.withTransaction(each))), (exit) => {
        // Committed: each has its own outcome (none for a caller gone before its turn). Not committed: nobody's events
        // were written.
        if (Exit.isFailure(exit)) return group.forEach((p) => p.answer(ended === undefined ? exit : Exit.failCause(ended)))
        group.forEach((p, i) => {
          const outcome = exit.value[i]
          if (outcome !== undefined) p.answer(outcome)
        })
      })
    }

    // Every append waits for the turn's end here: the alone path (`turnGroups`' `alone`) is store-sqlite's, tested there.
    // A lone append's write waits for the connection in its own fiber: a caller gone meanwhile interrupts it there,
    // before its statement runs (a group checks `cancelled` once it holds the connection, in its transaction).
    const grouped = turnGroups((group) => {
      const writing = runFork(write(group))
      if (group.length === 1) group[0]!.onCancel = () => writing.unsafeInterruptAsFork(writing.id())
    })
    return (request, conflict, inTransaction) => (inTransaction ? append(request, conflict, true) : grouped(request, conflict))
  })
