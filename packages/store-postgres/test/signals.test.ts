// Signals on PostgreSQL, between kernels on two pools (as two processes): a run waiting for a signal in one is woken
// by the NOTIFY the other sends with it (its poll is an hour: only the notice gets the signal to it in a test's
// time), and a signal sent with the same id by both at once is written once.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { Context, Duration, Effect, Fiber, Layer, Schema } from "effect"
import { EventStore, Kernel, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import pgDriver from "pg"

const pg = PgTest.server(inject("artanaPg"))
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

/** Waits for a "go" signal and returns its payload. */
const gate = Workflow.make({
  name: "gate",
  input: Schema.Null,
  output: Schema.String,
  run: (_i, ctx) => ctx.waitForSignal("go", Schema.String)
})

/** A kernel on its own pool over `url` whose waits hold the run and poll once an hour; and its event store. */
const kernelOn = (url: string) =>
  Effect.map(
    Layer.build(Kernel.layer({ workflows: [gate], signalWaitHold: Duration.infinity, signalPollInterval: "1 hour" }).pipe(
      Layer.provideMerge(Layer.mergeAll(PostgresStore.layer({ url, pool: { max: 4 } }), ScriptedModel.layer([]), ToolRegistry.layer([])))
    )),
    (context) => ({ kernel: Context.get(context, Kernel.Kernel), store: Context.get(context, EventStore.EventStore) })
  )

const awaiting = (store: EventStore.Service, runId: string) =>
  Effect.gen(function*() {
    while (!(yield* Effect.orElseSucceed(store.readEvents("acme", runId), () => [])).some((e) => e.payload._tag === "SignalAwaited")) {
      yield* Effect.sleep("20 millis")
    }
  })

/**
 * Waits until a session of the database is listening (its last statement a LISTEN, committed: the session is idle; a
 * LISTEN still executing shows too, and is not in force before its commit): a waiting kernel starts its listener with
 * its first wait, and a notice sent before the LISTEN is up is not heard (polling covers it, and here the poll is an
 * hour).
 */
const listening = (url: string) =>
  Effect.acquireUseRelease(
    Effect.promise(async () => {
      const client = new pgDriver.Client({ connectionString: url })
      await client.connect()
      return client
    }),
    (client) =>
      Effect.gen(function*() {
        const count = () =>
          Effect.promise(() => client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle' AND query ILIKE 'LISTEN%'"))
        while ((yield* count()).rows[0]?.n === 0) yield* Effect.sleep("20 millis")
      }),
    (client) => Effect.promise(() => client.end())
  )

describe.skipIf(pg.url === undefined)(`signals on PostgreSQL (${pg.description})`, () => {
  it.scopedLive("a run waiting in one kernel is woken by a signal another kernel (another pool) sends: LISTEN/NOTIFY", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const a = yield* kernelOn(url)
      const b = yield* kernelOn(url)
      const waiting = yield* Effect.fork(a.kernel.execute(gate, { runId: "gated", tenant, input: null }))
      yield* awaiting(a.store, "gated")
      yield* listening(url)
      yield* b.kernel.signal({ tenantId: "acme", runId: "gated", name: "go", payload: "from b" })
      const done = yield* Fiber.join(waiting).pipe(Effect.timeoutFail({ duration: "45 seconds", onTimeout: () => new Error("the wait was not woken") }))
      expect(done).toMatchObject({ status: "completed", output: "from b" })
    }), 90_000)

  it.scopedLive("the same signal id sent by two kernels at once is written once; the run takes it once", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const a = yield* kernelOn(url)
      const b = yield* kernelOn(url)
      const waiting = yield* Effect.fork(a.kernel.execute(gate, { runId: "once", tenant, input: null }))
      yield* awaiting(a.store, "once")
      // As above: a signal sent before the waiting kernel's LISTEN is up is heard only by its hourly poll.
      yield* listening(url)
      const receipts = yield* Effect.all(
        [a, b, a, b].map((k) => k.kernel.signal({ tenantId: "acme", runId: "once", name: "go", payload: "hook", id: "webhook-41" })),
        { concurrency: "unbounded" }
      )
      expect(receipts.filter((r) => r.duplicate !== true)).toHaveLength(1)
      expect(new Set(receipts.map((r) => `${r.signalId}@${r.seq}`)).size).toBe(1)
      expect(yield* Fiber.join(waiting).pipe(Effect.timeout("45 seconds"))).toMatchObject({ status: "completed", output: "hook" })
      const log = yield* b.store.readEvents("acme", "once")
      expect(log.filter((e) => e.payload._tag === "SignalSent")).toHaveLength(1)
    }), 90_000)

  it.scopedLive("a signal another pool writes while a run hands over (continue-as-new) is carried to the successor, which takes it", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const a = yield* kernelOn(url)
      const b = yield* kernelOn(url)
      // Generation 0 does a step; right before it hands over, kernel b (another pool) signals the run.
      const relay = Workflow.make({
        name: "relay",
        input: Schema.Number,
        output: Schema.String,
        run: (generation, ctx) =>
          Effect.gen(function*() {
            yield* ctx.step("work", Effect.succeed(generation), Schema.Number)
            if (generation > 0) return yield* Effect.orDie(ctx.waitForSignal("go", Schema.String, { timeout: 0 }))
            yield* Effect.orDie(b.kernel.signal({ tenantId: "acme", runId: "relay", name: "go", payload: "mid-handover" }))
            return yield* ctx.continueAsNew(1)
          })
      })
      expect(yield* a.kernel.execute(relay, { runId: "relay", tenant, input: 0 })).toEqual({ status: "completed", runId: "relay::continued::1", output: "mid-handover" })
      const types = (events: ReadonlyArray<{ readonly type: string }>) => events.map((e) => e.type)
      expect(types(yield* b.store.readEvents("acme", "relay"))).toEqual(["RunStarted", "StepCompleted", "SignalSent", "RunContinued"])
      const successor = yield* b.store.readEvents("acme", "relay::continued::1")
      expect(successor[1]?.payload).toMatchObject({ _tag: "SignalSent", payload: "mid-handover", carriedFrom: { runId: "relay", seq: 3 } })
      for (const runId of ["relay", "relay::continued::1"]) expect(yield* b.kernel.verify({ tenantId: "acme", runId })).toMatchObject({ ok: true })
    }), 90_000)
})
