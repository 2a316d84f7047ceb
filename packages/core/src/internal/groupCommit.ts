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
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import type { SequenceConflict, StoreError } from "../Errors.js"
import type { AppendRequest } from "../EventStore.js"
import { transactionDefects } from "../SqlErrors.js"
import type { AppendBatch } from "./sqlAppend.js"

type Outcome = Exit.Exit<void, SequenceConflict | StoreError | SqlError>

/** An append waiting for its group: answered with its own outcome once the group's transaction has committed. */
export interface Pending {
  readonly request: AppendRequest
  readonly conflict: () => SequenceConflict
  readonly answer: (outcome: Outcome) => void
}

/**
 * Gathers the appends made in one turn of the event loop: the first of a turn schedules `write` for the turn's end
 * (`setImmediate`), which gets every append made before it, each to answer. An append interrupted before its group
 * is written leaves the group, and nothing of it is written.
 */
export const turnGroups = (write: (group: ReadonlyArray<Pending>) => void) => {
  let pending: Array<Pending> = []
  const flush = () => {
    const group = pending
    pending = []
    if (group.length > 0) write(group)
  }
  return (request: AppendRequest, conflict: () => SequenceConflict): Effect.Effect<void, SequenceConflict | StoreError | SqlError> =>
    Effect.async((resume) => {
      if (pending.length === 0) setImmediate(flush)
      const entry: Pending = { request, conflict, answer: resume }
      pending.push(entry)
      return Effect.sync(() => {
        const at = pending.indexOf(entry)
        if (at !== -1) pending.splice(at, 1)
      })
    })
}

/** `append`, grouped: appends made in one turn of the event loop share a transaction. */
export const make = (sql: SqlClient.SqlClient, append: AppendBatch): Effect.Effect<AppendBatch> =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    const runFork = Runtime.runFork(runtime)

    /** One append on its own; or the group in one transaction, each in a savepoint, answered after the commit. */
    const write = (group: ReadonlyArray<Pending>): Effect.Effect<void> => {
      if (group.length === 1) {
        const only = group[0]!
        return Effect.map(Effect.exit(append(only.request, only.conflict, false)), only.answer)
      }
      const each = Effect.forEach(group, (p) => Effect.exit(sql.withTransaction(append(p.request, p.conflict, true))))
      return Effect.map(Effect.exit(transactionDefects(sql.withTransaction(each))), (exit) => {
        // Committed: each has its own outcome. Not committed: nobody's events were written.
        if (Exit.isSuccess(exit)) group.forEach((p, i) => p.answer(exit.value[i]!))
        else group.forEach((p) => p.answer(exit))
      })
    }

    const grouped = turnGroups((group) => runFork(write(group)))
    return (request, conflict, inTransaction) => (inTransaction ? append(request, conflict, true) : grouped(request, conflict))
  })
