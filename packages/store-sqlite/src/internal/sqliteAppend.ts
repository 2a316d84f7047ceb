/**
 * The store's own SQLite append (`SqlEventStore.AppendDialect` for its client): the statements of core's SQLite append
 * (`SqlEventStore.sqliteStatements`, the head trigger's), run on the driver's own prepared statements under the
 * client's one permit, and group-committed.
 *
 * Group commit: appends that arrive in one turn of the event loop are written together, in one transaction with a
 * savepoint each, and each caller is answered once that transaction has committed (durable at the file's
 * `synchronous` setting), with its own outcome: a refused append rolls back to its savepoint and fails alone, while a
 * failure that may have ended the transaction (a full disk, an I/O error) fails the whole group, none of it written.
 * The first append of a turn schedules the group's write for the turn's end (`setImmediate`); the runs a commit
 * answered continue at once, so their next appends make the next group. A group of one is its plain append: one
 * INSERT, committed on its own, for a tool step's batch. A caller interrupted before its group's write began (the
 * group waiting for the connection) is left out of it (`SqlEventStore.waiting`). A run appending alone (no other run
 * appended in this turn or in the last turn that had appends, no transaction holds the connection, no group waits for
 * it) does not wait for the turn's end: its INSERT is written at once, synchronously (`SqlEventStore.turnGroups`).
 * An append inside a caller's transaction of this client is not grouped: it runs in that transaction (a refused one
 * leaves the transaction usable); inside another client's transaction (another database's), it is grouped as any
 * other.
 *
 * Why not through the `SqlClient`: each of its statements costs a span, a compile, a cache lookup and a few fibers
 * (about 35 us of CPU, measured), twice a tool step; here the write is one synchronous call per group.
 */
import { Event, type Errors, type EventStore, SqlErrors, SqlEventStore } from "@artana/core"
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { Database, Statement } from "./sqliteDriver.js"
import type { Lane } from "./sqliteClient.js"
import type { WalFlush } from "./walFlush.js"

type Failure = Errors.SequenceConflict | Errors.StoreError | SqlError
type Outcome = Exit.Exit<void, Failure>

type Pending = SqlEventStore.GroupedAppend

const OK: Outcome = Exit.void

const noAnswer = () => {}

/** More distinct statements than this (batches of many sizes) and the cache starts again. */
const CACHE_LIMIT = 64

/**
 * The append for tables `t`, on the connection of `lane`; `onCommit` hears the number of appends each commit made
 * durable. With `flush` (a store at `synchronous = "full"` on a file), the commits of groups (with `alwaysOffLoop`, all
 * commits) are synced off the event loop, and callers answered once their commit's sync ended (`./walFlush.ts`).
 */
export const make = (
  lane: Lane,
  t: SqlEventStore.Tables,
  onCommit?: (appends: number) => void,
  flush?: WalFlush,
  alwaysOffLoop = false
): SqlEventStore.AppendBatch => {
  const s = SqlEventStore.sqliteStatements(t)
  const cache = new Map<string, Statement>()
  const prepared = (db: Database, text: string): Statement => {
    let statement = cache.get(text)
    if (statement === undefined) {
      if (cache.size >= CACHE_LIMIT) cache.clear()
      statement = db.prepare(text)
      cache.set(text, statement)
    }
    return statement
  }
  const run = (db: Database, statement: SqlEventStore.SqliteStatement): number => prepared(db, statement.text).run(...statement.params).changes

  /** Writes one batch; throws the driver's error. Its outcome: undefined when written, else the conflict. */
  const statements = (db: Database, request: EventStore.AppendRequest, conflict: () => Errors.SequenceConflict, plan: SqlEventStore.SqlitePlan, summary: Event.BatchSummary) => {
    if (plan === "create") {
      const row = s.createRun(request)
      // A new run's batch must start with RunStarted; the in-memory store refuses it the same way.
      if (row === undefined) return conflict()
      run(db, row)
    }
    for (const chunk of SqlEventStore.chunksOf(request.events)) {
      // No row written: the writer is fenced (the head trigger aborts the statement on any other conflict).
      if (run(db, s.insert(request, chunk)) !== chunk.length) return conflict()
    }
    if (plan === "update") run(db, s.updateRun(request, summary))
    return undefined
  }

  /**
   * One batch, as its own transaction (`nested` false: a single INSERT commits alone) or inside the open one
   * (`nested`: a savepoint, so a refused batch leaves that transaction as it was).
   */
  const writeOne = (db: Database, p: Pending, nested: boolean): Outcome => {
    const summary = Event.summarize(p.request.events)
    const plan = s.plan(p.request, summary)
    if (plan === "insert") return attempt(() => statements(db, p.request, p.conflict, plan, summary))
    const [begin, commit, rollback] = nested ? ["SAVEPOINT artana_append", "RELEASE artana_append", "ROLLBACK TO artana_append"] : ["BEGIN", "COMMIT", "ROLLBACK"]
    const begun = attempt(() => {
      db.exec(begin)
      return undefined
    })
    if (Exit.isFailure(begun)) return begun
    const outcome = attempt(() => statements(db, p.request, p.conflict, plan, summary))
    if (Exit.isSuccess(outcome)) {
      const committed = attempt(() => {
        db.exec(commit)
        return undefined
      })
      if (Exit.isSuccess(committed)) return outcome
      undo(db, rollback, nested)
      return committed
    }
    undo(db, rollback, nested)
    return outcome
  }

  /** The group in one transaction, each append in a savepoint; answered once it committed. */
  const writeGroup = (db: Database, group: ReadonlyArray<Pending>): ReadonlyArray<Outcome> => {
    if (group.length === 1) return [writeOne(db, group[0]!, false)]
    const begun = attempt(() => {
      db.exec("BEGIN")
      return undefined
    })
    if (Exit.isFailure(begun)) return group.map(() => begun)
    const outcomes: Array<Outcome> = []
    for (const p of group) {
      const outcome = writeOne(db, p, true)
      // A failure other than a refused batch (a full disk, an I/O error) may have ended the transaction: none is written.
      if (brokeTransaction(outcome)) {
        undo(db, "ROLLBACK", false)
        return group.map(() => outcome)
      }
      outcomes.push(outcome)
    }
    const committed = attempt(() => {
      db.exec("COMMIT")
      return undefined
    })
    if (Exit.isSuccess(committed)) return outcomes
    // Not committed: nobody's events were written.
    undo(db, "ROLLBACK", false)
    return group.map(() => committed)
  }

  const grouped = groupedWrites(lane, writeGroup, onCommit, flush, alwaysOffLoop)

  // Inside a transaction of this client, the append is part of it; inside another client's (another database's), it is
  // an append like any other.
  return (request, conflict, inTransaction) =>
    inTransaction
      ? Effect.withFiberRuntime((fiber) =>
        lane.holds(fiber.currentContext)
          ? Effect.flatten(lane.inTransaction((db) => {
            // A sync failed: refused, as every write of the store, until a checkpoint (outside a transaction) recovers.
            const refused = flush?.refused(db, false)
            return refused === undefined ? writeOne(db, { request, conflict, answer: noAnswer }, true) : refusedBy(refused)
          }))
          : grouped.now(request, conflict)
      )
      : grouped.now(request, conflict)
}

/** The outcome of an append refused because a sync failed (`./walFlush.ts`). */
const refusedBy = (error: Error): Outcome => Exit.fail(new SqlError({ cause: error, message: "Failed to append" }))

/** `write`'s outcome: its conflict, or the driver's error as the `SqlError` the store maps (a conflict, or a `StoreError`). */
const attempt = (write: () => Errors.SequenceConflict | undefined): Outcome => {
  try {
    const conflict = write()
    return conflict === undefined ? OK : Exit.fail(conflict)
  } catch (cause) {
    return Exit.fail(new SqlError({ cause, message: "Failed to execute statement" }))
  }
}

/** A failure that may have ended the group's transaction (not a constraint SQLite refused the statement for). */
const brokeTransaction = (outcome: Outcome): boolean => Exit.isFailure(outcome) && SqlErrors.endsSqliteTransaction(outcome.cause)

/** Rolls back what a refused batch or group wrote; a rollback SQLite already made (on a failed COMMIT) is no error. */
const undo = (db: Database, rollback: string, nested: boolean) => {
  try {
    db.exec(rollback)
    if (nested) db.exec("RELEASE artana_append")
  } catch {
    // The transaction is gone already: SQLite rolled it back itself.
  }
}

/**
 * The appends made outside a caller's transaction, written by `writeGroup`: each turn's group at the turn's end, or a
 * lone run's append at once (`SqlEventStore.turnGroups`), each answered once durable: with `flush`, a group of two or
 * more (with `alwaysOffLoop`, any commit) after its commit's sync, off the loop; `onCommit` hears each commit's count
 * then.
 */
const groupedWrites = (
  lane: Lane,
  writeGroup: (db: Database, group: ReadonlyArray<Pending>) => ReadonlyArray<Outcome>,
  onCommit: ((appends: number) => void) | undefined,
  flush: WalFlush | undefined,
  alwaysOffLoop: boolean
) => {
  /** Whether a commit of `appends` appends is synced off the loop. */
  const unsyncedFor = (appends: number) => flush !== undefined && (appends > 1 || alwaysOffLoop)
  /**
   * Writes `group` (an outcome for every caller even if something throws); `unsynced`, its commit is not synced yet
   * (`flush.after` does it).
   */
  const commit = (db: Database, group: ReadonlyArray<Pending>, unsynced: boolean): ReadonlyArray<Outcome> => {
    // A sync failed: nothing is written until a checkpoint recovers, tried first (see `./walFlush.ts`).
    const failed = flush?.refused(db, true)
    if (failed !== undefined) return group.map(() => refusedBy(failed))
    try {
      return unsynced && flush !== undefined ? flush.unsynced(db, () => writeGroup(db, group)) : writeGroup(db, group)
    } catch (cause) {
      // Not thrown by a statement (those are outcomes): still, every caller is answered, and a group's transaction,
      // if its BEGIN ran, is not left open for the next append to land in uncommitted.
      if (group.length > 1) undo(db, "ROLLBACK", false)
      const failure: Outcome = Exit.fail(new SqlError({ cause, message: "Failed to append" }))
      return group.map(() => failure)
    }
  }

  /** Tells `onCommit` how many appends a commit made durable (its own error fails no durable append). */
  const report = (outcomes: ReadonlyArray<Outcome>) => {
    if (onCommit === undefined) return
    const written = outcomes.reduce((n, outcome) => (Exit.isSuccess(outcome) ? n + 1 : n), 0)
    try {
      if (written > 0) onCommit(written)
    } catch {
      // A metrics hook's own error: it must not fail appends that are durable, nor leave a group unanswered.
    }
  }

  /**
   * Calls `answer` with `outcomes` once durable: at once when committed synced (or nothing was written), else after
   * the sync.
   */
  const durable = (outcomes: ReadonlyArray<Outcome>, unsynced: boolean, answer: (outcomes: ReadonlyArray<Outcome>) => void) => {
    if (!unsynced || flush === undefined || !outcomes.some(Exit.isSuccess)) {
      report(outcomes)
      return answer(outcomes)
    }
    flush.after((error) => {
      // Written but not known to be durable: failed, and may or may not be in the log (as a write interrupted in flight).
      const synced = error === undefined ? outcomes : outcomes.map((outcome): Outcome => (Exit.isSuccess(outcome) ? refusedBy(error) : outcome))
      report(synced)
      answer(synced)
    })
  }

  // Groups flushed while a transaction held the connection and not written yet: nothing is written before them, so
  // appends are written in the order they were made.
  let queued = 0
  return SqlEventStore.turnGroups(
    (group) => {
      // The appends whose callers still wait, once the write begins (synchronously: none can leave during it), answered.
      const write = (db: Database) => {
        const written = SqlEventStore.waiting(group)
        if (written.length === 0) return
        // Two appends or more: synced off the loop, which serves other runs meanwhile. One: committed in place, as alone
        // (unless every commit is synced off the loop).
        const unsynced = unsyncedFor(written.length)
        durable(commit(db, written, unsynced), unsynced, (outcomes) => written.forEach((p, i) => p.answer(outcomes[i]!)))
      }
      // The common case, no transaction open: written here and now, without a fiber to wait for the connection.
      if (lane.idle() && queued === 0) return lane.now(write)
      queued++
      Effect.runFork(Effect.ensuring(lane.exclusive(write), Effect.sync(() => queued--)))
    },
    // A run appending alone: its one INSERT now, synchronously, when no transaction holds the connection and no
    // group waits for it, committed at the connection's own `synchronous` (its sync, if any, on the loop: it is the
    // run's own wait, and a run alone writes so for a few milliseconds at most before the loop turns), and
    // answered in place; or, when every commit is synced off the loop, answered once its sync ended.
    (request, conflict) => {
      if (!lane.idle() || queued !== 0) return undefined
      const unsynced = unsyncedFor(1)
      const outcomes = lane.now((db) => commit(db, [{ request, conflict, answer: noAnswer }], unsynced))
      if (!unsynced) {
        report(outcomes)
        return outcomes[0]!
      }
      return Effect.async<void, Failure>((resume) => durable(outcomes, true, (synced) => resume(synced[0]!)))
    }
  )
}
