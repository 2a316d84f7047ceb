/**
 * Notices between processes that a run was written to, so that what waits on the run in another process (a
 * `ctx.waitForSignal` holding its run, a live reader) is woken at once rather than at its next poll. The kernel sends
 * one after each `Kernel.signal`. Optional: without it, waits and readers in other processes poll (their own
 * process's writes wake them at once either way). `@artana/store-postgres` provides it over LISTEN/NOTIFY.
 *
 * A notice is a hint, never the truth: what it wakes reads the run's log, and polling stays the backstop for a notice
 * lost (a listening connection that dropped, one sent before the listener was up).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

export interface Service {
  /** Tells every process (this one too) that the run was written to. Best effort: a failure is logged, not raised. */
  readonly notify: (tenantId: string, runId: string) => Effect.Effect<void>
  /** Resolves once a notice of the run comes after this call (take it before reading the run, so none is missed). */
  readonly ticket: (tenantId: string, runId: string) => Effect.Effect<Effect.Effect<void>>
  /**
   * True when other processes hear this store's commits without `notify` (SQLite: the file is watched). Otherwise the
   * kernel notifies after each write to a run (coalesced per run), so that live readers in other processes wake.
   */
  readonly commitsHeard?: boolean | undefined
  /**
   * Registers this process's interest in the run's writes for the scope, before its first read (a live reader). A store
   * that has it tells of an append only while someone watches the run (PostgreSQL: the append's own statement NOTIFYs
   * when a watcher holds the run's lock), so writes nobody follows cost no notice. Without it, every write is told.
   */
  readonly watch?: ((tenantId: string, runId: string) => Effect.Effect<void, never, Scope.Scope>) | undefined
  /** True when the store's appends tell watchers themselves (see `watch`): the kernel sends no notice after an append. */
  readonly appendsTold?: boolean | undefined
  /** The notice of a write other than an append (deltas written behind), reaching only watchers; default `notify`. */
  readonly notifyWatchers?: ((tenantId: string, runId: string) => Effect.Effect<void>) | undefined
}

/** Notices of writes to runs, across processes. */
export class RunNotices extends Context.Tag("@artana/core/RunNotices")<RunNotices, Service>() {}

/** A channel of text messages every process hears (PostgreSQL: `PgClient.notify` / `PgClient.listen`). */
export interface Channel<E> {
  readonly send: (payload: string) => Effect.Effect<void, E>
  /** What every process sent, this one's too; the stream is opened once per process, for the life of the scope. */
  readonly listen: Stream.Stream<string, E>
  /**
   * See `Service.watch`. A channel with it is one whose store's appends tell the runs watched themselves
   * (`appendsTold`), and whose `listen` emits `everyRun` each time its LISTEN is (again) up, its watches held again.
   */
  readonly watch?: ((tenantId: string, runId: string) => Effect.Effect<void, never, Scope.Scope>) | undefined
  /** See `Service.notifyWatchers`. */
  readonly sendWatched?: ((tenantId: string, runId: string) => Effect.Effect<void, E>) | undefined
}

/**
 * A message a channel's `listen` may emit once its LISTEN is (again) up: what was sent before may not have been heard,
 * so every ticket waiting is woken (its waiter reads the run again).
 */
export const everyRun = "*"

const encode = (tenantId: string, runId: string): string => JSON.stringify([tenantId, runId])
const keyOf = (tenantId: string, runId: string) => `${tenantId}\u0000${runId}`

/** Notices over a channel: one listener per process, waking the tickets of the runs it hears of. */
export const fromChannel = <E>(channel: Channel<E>): Effect.Effect<Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    const waiting = new Map<string, Deferred.Deferred<void>>()
    const heard = (payload: string) =>
      Effect.suspend(() => {
        if (payload === everyRun) {
          const all = [...waiting.values()]
          waiting.clear()
          return Effect.forEach(all, (d) => Deferred.succeed(d, undefined), { discard: true })
        }
        let parsed: unknown
        try {
          parsed = JSON.parse(payload)
        } catch {
          return Effect.void
        }
        if (!Array.isArray(parsed) || typeof parsed[0] !== "string" || typeof parsed[1] !== "string") return Effect.void
        const key = keyOf(parsed[0], parsed[1])
        const d = waiting.get(key)
        if (d === undefined) return Effect.void
        waiting.delete(key)
        return Deferred.succeed(d, undefined)
      })
    // The listener starts with the first ticket, not with the layer: on PostgreSQL it holds a connection of the pool
    // for the life of the scope, which a process that never waits on a run (or a pool of 2 migrating) must not lose.
    const scope = yield* Effect.scope
    let listening = false
    const listen = Effect.suspend(() => {
      if (listening) return Effect.void
      listening = true
      return channel.listen.pipe(
        Stream.runForEach(heard),
        // A listening connection that drops (a server restart) is opened again; polling covers the gap.
        Effect.retry(Schedule.exponential(Duration.millis(200)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(5))))),
        Effect.ignore,
        Effect.forkIn(scope),
        Effect.asVoid
      )
    })
    const unsent = (runId: string) => (e: E) => Effect.logWarning(`notice of run ${runId} not sent (waiters in other processes poll instead)`, e)
    const { sendWatched } = channel
    return {
      notify: (tenantId, runId) => channel.send(encode(tenantId, runId)).pipe(Effect.catchAll(unsent(runId))),
      ...(channel.watch === undefined ? {} : { watch: channel.watch, appendsTold: true }),
      ...(sendWatched === undefined ? {} : { notifyWatchers: (tenantId: string, runId: string) => sendWatched(tenantId, runId).pipe(Effect.catchAll(unsent(runId))) }),
      ticket: (tenantId, runId) =>
        Effect.zipRight(listen, Effect.suspend(() => {
          const key = keyOf(tenantId, runId)
          const d = waiting.get(key)
          if (d !== undefined) return Effect.succeed(Deferred.await(d))
          return Effect.map(Deferred.make<void>(), (made) => {
            waiting.set(key, made)
            return Deferred.await(made)
          })
        }))
    } satisfies Service
  })
