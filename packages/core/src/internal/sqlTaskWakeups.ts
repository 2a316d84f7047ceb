/**
 * The SQL task queue's wake-ups: a change that makes a task claimable wakes this process's workers at once, and on
 * PostgreSQL every listening process (`pg_notify` on the queue's channel, sent when the change commits).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { Options } from "../SqlTaskQueue.js"

/** `notify` (a task changed) and `wakeups` (this process's changes, and with `listen` every process's) on `notifyChannel`. */
export const make = (sql: SqlClient.SqlClient, options: Options, notifyChannel: string) =>
  Effect.map(PubSub.sliding<void>(1), (hub) => {
    /**
     * Wakes this process's workers now, and on Postgres every listener when the transaction commits. With `listen`
     * the local wake-up is left out: Postgres delivers a session's own notifications to its listener too, and one
     * change should be one wake-up.
     */
    const notify = (taskId: string) =>
      Effect.zipRight(
        sql.onDialectOrElse({ pg: () => Effect.asVoid(sql`SELECT pg_notify(${notifyChannel}, ${taskId})`), orElse: () => Effect.void }),
        options.listen === undefined ? PubSub.publish(hub, undefined) : Effect.void
      )

    const fromOthers = options.listen === undefined ? Stream.empty : options.listen(notifyChannel).pipe(
      // A listening connection that drops (a server restart) is opened again; polling covers the gap.
      Stream.retry(Schedule.exponential(Duration.millis(200)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(5))))),
      Stream.catchAll(() => Stream.empty),
      Stream.as(undefined)
    )
    const wakeups: Stream.Stream<void> = Stream.merge(Stream.fromPubSub(hub), fromOthers)
    return { notify, wakeups }
  })
