// A lineage's budget across processes on PostgreSQL: two kernels on two pools drive sub-runs of one root at once. Each
// call's estimate is held in the database (`BudgetHolds`, ordered per lineage by an advisory lock), so together they
// send no more calls than the budget holds; before, each counted only its own calls in flight and together sent four.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { BudgetHolds, Chat, EventStore, Kernel, ModelPort, Tenant, ToolRegistry, Workflow } from "@artana/core"
import * as SqlClient from "@effect/sql/SqlClient"
import { Cause, Context, Deferred, Effect, Either, Exit, Fiber, Layer, Option, Schema } from "effect"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"

const pg = PgTest.server(inject("artanaPg"))
/** Room for two calls of at most one output token ($1 each). */
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 2.5 })

const oneCall = Workflow.make({
  name: "one-call",
  input: Schema.Null,
  output: Schema.String,
  run: (_input, ctx) => Effect.map(ctx.modelStep({ messages: [Chat.user("hi")], maxOutputTokens: 1, key: "m" }), (r) => String(r.message.content))
})

/** A kernel on its own pool over `url` (another process, as far as the database can tell), with `port` as its model. */
const kernelOn = (url: string, port: ModelPort.Service) =>
  Effect.map(
    Layer.build(Kernel.layer().pipe(
      Layer.provideMerge(Layer.mergeAll(PostgresStore.layer({ url, pool: { max: 4 } }), Layer.succeed(ModelPort.ModelPort, port), ToolRegistry.layer([])))
    )),
    (context) => ({
      kernel: Context.get(context, Kernel.Kernel),
      store: Context.get(context, EventStore.EventStore),
      sql: Context.get(context, SqlClient.SqlClient),
      holds: Context.get(context, BudgetHolds.BudgetHolds)
    })
  )

/** A model at $1 an output token that answers at once. */
const answering = ModelPort.make({
  defaultModel: "m",
  prices: { m: { input: 0, cachedInput: 0, output: 1_000_000 } },
  generate: (request) => Effect.succeed({ model: request.model, message: { role: "assistant" as const, content: "answer" }, usage: { inputTokens: 1, outputTokens: 1 } })
})
/** Room for one call. */
const roomForOne = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1.5 })

describe.skipIf(pg.url === undefined)(`a lineage's budget across two pools (${pg.description})`, () => {
  it.scopedLive("six sub-runs, three on each pool, under room for two calls: two calls are sent, four refused before the call", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const open = yield* Deferred.make<void>()
      let calls = 0
      // $1 an output token; every answer waits for `open`, so every call sent is in flight until then.
      const port = ModelPort.make({
        defaultModel: "m",
        prices: { m: { input: 0, cachedInput: 0, output: 1_000_000 } },
        generate: (request) =>
          Effect.zipRight(
            Effect.sync(() => void calls++),
            Effect.as(Deferred.await(open), { model: request.model, message: { role: "assistant" as const, content: "answer" }, usage: { inputTokens: 1, outputTokens: 1 } })
          )
      })
      const a = yield* kernelOn(url, port)
      const b = yield* kernelOn(url, port)
      yield* a.kernel.execute(Workflow.make({ name: "root", input: Schema.Null, output: Schema.Null, run: () => Effect.succeed(null) }), { runId: "root", tenant, input: null })
      const children = yield* Effect.forEach([a, b, a, b, a, b], (k, i) =>
        Effect.fork(Effect.either(k.kernel.execute(oneCall, { runId: `root::sub_agent::${i}`, tenant, input: null, parentRunId: "root" }))))
      // Until every sub-run has either sent its call (held at the gate) or ended (refused).
      const settled = () => Effect.map(Effect.forEach(children, (f) => f.poll), (polls) => calls + polls.filter((p) => p._tag === "Some").length)
      while ((yield* settled()) < children.length) yield* Effect.sleep("10 millis")
      const inFlight = calls
      yield* Deferred.succeed(open, undefined)
      const results = yield* Effect.forEach(children, Fiber.join)
      expect({ inFlight, refused: results.filter(Either.isLeft).map((r) => r.left._tag) }).toEqual({ inFlight: 2, refused: Array(4).fill("BudgetExceeded") })
      const lineage = yield* b.store.listRuns("acme", { rootRunId: "root" })
      expect(lineage.reduce((sum, r) => sum + r.costUsd, 0)).toBe(2)
    }), 90_000)

  it.scopedLive("a run interrupted while its hold commits leaves no hold behind; run again, it completes", () =>
    Effect.gen(function*() {
      // Found by a review: interrupted during a slow COMMIT (synchronous replication, a loaded server), the hold was
      // committed with no release registered, and refused the lineage's calls for the hold's lifetime.
      const url = yield* PgTest.freshDatabase(pg.url!)
      const { kernel, sql, store } = yield* kernelOn(url, answering)
      yield* sql.unsafe(`CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$`)
      yield* sql.unsafe(`CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON budget_holds DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()`)
      const run = yield* Effect.fork(kernel.execute(oneCall, { runId: "r1", tenant: roomForOne, input: null }))
      yield* Effect.sleep("400 millis")
      yield* Fiber.interrupt(run)
      yield* sql.unsafe(`DROP TRIGGER slow_commit ON budget_holds`)
      expect(yield* sql.unsafe(`SELECT usd FROM budget_holds`)).toEqual([])
      expect(yield* kernel.execute(oneCall, { runId: "r1", tenant: roomForOne, input: null })).toMatchObject({ status: "completed" })
      expect(yield* store.lineageCostUsd("acme", "r1")).toBe(1)
    }), 90_000)

  it.scopedLive("a hold whose COMMIT fails ends the execution with a StoreError (a fault it can be resumed from), not a defect", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const { kernel, sql } = yield* kernelOn(url, answering)
      yield* sql.unsafe(`CREATE FUNCTION fail_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001'; END $$`)
      yield* sql.unsafe(`CREATE CONSTRAINT TRIGGER fail_commit AFTER INSERT ON budget_holds DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_commit()`)
      const exit = yield* Effect.exit(kernel.execute(oneCall, { runId: "r1", tenant: roomForOne, input: null }))
      expect(Exit.isFailure(exit) && !Cause.isDie(exit.cause) && Option.getOrUndefined(Cause.failureOption(exit.cause))).toMatchObject({ _tag: "StoreError" })
      yield* sql.unsafe(`DROP TRIGGER fail_commit ON budget_holds`)
      expect(yield* kernel.resume({ tenantId: "acme", runId: "r1", workflow: oneCall })).toMatchObject({ status: "completed" })
    }), 90_000)

  it.scopedLive("a hold of one lineage never waits on another lineage's COMMIT, lapsed holds about or not", () =>
    Effect.gen(function*() {
      // Found by a review: each hold deleted every lineage's lapsed holds inside its transaction, row-locking them
      // until its COMMIT, so a slow COMMIT of lineage A stalled the holds of lineage B.
      const url = yield* PgTest.freshDatabase(pg.url!)
      const a = yield* kernelOn(url, answering)
      const b = yield* kernelOn(url, answering)
      const hold = (k: typeof a, rootRunId: string, holdId: string, now: number, expiresAt: number) =>
        k.holds.hold({ tenantId: "acme", rootRunId, holdId, usd: 0.1, limitUsd: 10, now, expiresAt })
      // A third lineage's hold that lapsed (its process died).
      yield* hold(a, "dead", "dead-1", Date.now() - 10_000, Date.now() - 1)
      // Lineage A's COMMIT waits until the test lets it go (as a commit to a slow standby does).
      const gate = yield* Deferred.make<void>()
      const gateHeld = yield* Deferred.make<void>()
      yield* Effect.fork(a.sql.withTransaction(Effect.zipRight(
        Effect.zipRight(a.sql`SELECT pg_advisory_xact_lock(4242)`, Deferred.succeed(gateHeld, undefined)),
        Deferred.await(gate)
      )))
      yield* Deferred.await(gateHeld)
      yield* a.sql.unsafe(`CREATE FUNCTION held_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.root_run_id = 'A' THEN PERFORM pg_advisory_xact_lock(4242); END IF; RETURN NULL; END $$`)
      yield* a.sql.unsafe(`CREATE CONSTRAINT TRIGGER held_commit AFTER INSERT ON budget_holds DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION held_commit()`)
      const inA = yield* Effect.fork(hold(a, "A", "a-1", Date.now(), Date.now() + 60_000))
      // Until A's COMMIT waits on the gate (PostgreSQL shows an advisory lock not granted).
      while ((yield* b.sql`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)[0]?.n === 0) yield* Effect.sleep("10 millis")
      // Lineage B's hold goes through while A's COMMIT still waits.
      expect(yield* hold(b, "B", "b-1", Date.now(), Date.now() + 60_000).pipe(Effect.timeout("30 seconds"))).toMatchObject({ held: true })
      expect(yield* inA.poll).toEqual(Option.none())
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(inA)).toMatchObject({ held: true })
    }), 90_000)
})
