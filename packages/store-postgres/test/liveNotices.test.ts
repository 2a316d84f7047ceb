// A live reader on one pool follows a run another pool writes, woken by NOTIFY (`RunNotices`): its backstop poll is an
// hour, so only the writer's notices can bring it the run's deltas and events in the test's time.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { Chunk, Context, Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"
import { Kernel, type Live, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel, TestWorkflows } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { session } from "./session.js"

const pg = PgTest.server(inject("artanaPg"))
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

/** A kernel on its own `PostgresStore` pool over `url` (its own hub: another process, as far as its readers know). */
const kernelOn = (url: string, script: ReadonlyArray<ScriptedModel.Reply>) =>
  Effect.map(
    Layer.build(Kernel.layer({ livePollInterval: "1 hour" }).pipe(
      Layer.provideMerge(Layer.mergeAll(PostgresStore.layer({ url, pool: { max: 4 } }), ScriptedModel.layer(script), ToolRegistry.layer([])))
    )),
    (context) => Context.get(context, Kernel.Kernel)
  )

const texts = (events: ReadonlyArray<Live.LiveEvent>) => events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))

describe.skipIf(pg.url === undefined)(`live readers woken by NOTIFY (${pg.description})`, () => {
  it.scoped("a reader whose poll is an hour gets another pool's run, deltas and events, through RunNotices", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const writer = yield* kernelOn(url, [ScriptedModel.text("one two three", { deltas: ["one ", "two ", "three"] })])
      const reader = yield* kernelOn(url, [])
      // The reader starts before the run does: everything it gets, it gets by a notice.
      const following = yield* Effect.fork(reader.live({ tenantId: "acme", runId: "noticed" }, { waitForStart: true }).pipe(
        Stream.takeUntil((e) => e._tag === "Paused"),
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      ))
      expect((yield* writer.execute(TestWorkflows.chatThenPause, { runId: "noticed", tenant, input: "q" })).status).toBe("paused")
      const seen = yield* Fiber.join(following).pipe(
        Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("the reader was not woken by the writer's notices") }),
        // A reader still waiting is stopped before the pools close (its listening connection goes back first).
        Effect.ensuring(Fiber.interrupt(following))
      )
      expect(texts(seen)).toEqual(["one ", "two ", "three"])
      expect(seen[seen.length - 1]?._tag).toBe("Paused")
      expect(seen.filter((e) => e._tag === "ModelCompleted")).toHaveLength(1)
    }), 120_000)

  it.scopedLive("a run nobody follows is written without a notice: its appends and deltas NOTIFY nothing", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const writer = yield* kernelOn(url, [ScriptedModel.text("one two three", { deltas: ["one ", "two ", "three"] })])
      // A bare session listening on the runs channel hears every notice sent on it, in commit order.
      const heard: Array<string> = []
      const listener = yield* session(url)
      listener.on("notification", (n) => void heard.push(n.payload ?? ""))
      yield* Effect.promise(() => listener.query(`LISTEN "${PostgresStore.runsChannel()}"`))
      expect((yield* writer.execute(TestWorkflows.chatThenPause, { runId: "quiet", tenant, input: "q" })).status).toBe("paused")
      // A marker sent after the run's last commit arrives after every notice the run's writes sent.
      yield* Effect.promise(() => listener.query("SELECT pg_notify($1, 'marker')", [PostgresStore.runsChannel()]))
      while (!heard.includes("marker")) yield* Effect.sleep("20 millis")
      expect(heard).toEqual(["marker"])
    }), 120_000)

  it.scopedLive("a reader that joins mid-run and loses its listening connection still follows the run to its end", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const held = yield* Deferred.make<void>()
      const echo = Tool.make({ name: "echo", description: "echo", parameters: Schema.Struct({ i: Schema.Number }), idempotent: true, handler: ({ i }) => Effect.succeed(i) })
      const hold = Tool.make({ name: "hold", description: "waits for the test", parameters: Schema.Struct({}), idempotent: true, handler: () => Effect.as(Deferred.await(held), 0) })
      const steps = Workflow.make({
        name: "held-steps",
        input: Schema.Null,
        output: Schema.Number,
        run: (_input, ctx) =>
          Effect.gen(function*() {
            for (let i = 0; i < 5; i++) yield* ctx.tool(echo, { i })
            yield* ctx.tool(hold, {})
            for (let i = 5; i < 20; i++) yield* ctx.tool(echo, { i })
            return 20
          })
      })
      const kernelWith = (tools: ReadonlyArray<Tool.Tool>) =>
        Effect.map(
          Layer.build(Kernel.layer({ livePollInterval: "1 hour", workflows: [steps] }).pipe(
            Layer.provideMerge(Layer.mergeAll(PostgresStore.layer({ url, pool: { max: 4 }, applicationName: "mid-run" }), ScriptedModel.layer([]), ToolRegistry.layer(tools)))
          )),
          (context) => Context.get(context, Kernel.Kernel)
        )
      const writer = yield* kernelWith([echo, hold])
      const reader = yield* kernelWith([])
      const running = yield* Effect.fork(writer.execute(steps, { runId: "held", tenant, input: null }))
      const admin = yield* session(url)
      // The run has written its first five steps, and is held at its sixth, when the reader joins.
      while ((yield* Effect.promise(() => admin.query("SELECT count(*)::int AS n FROM events WHERE run_key = (SELECT run_key FROM runs WHERE run_id = 'held')"))).rows[0].n < 11) {
        yield* Effect.sleep("20 millis")
      }
      const following = yield* Effect.fork(reader.live({ tenantId: "acme", runId: "held" }).pipe(
        Stream.takeUntil((e) => e._tag === "Completed"),
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      ))
      // Once the reader watches the run (its lock taken), its listening connection is ended by the server.
      // This test's database only: pg_locks lists the whole cluster's advisory locks, other tests' readers' too.
      const ours = "locktype = 'advisory' AND mode = 'ShareLock' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
      const watching = () => admin.query(`SELECT pid FROM pg_locks WHERE ${ours}`)
      while ((yield* Effect.promise(watching)).rows.length === 0) yield* Effect.sleep("20 millis")
      yield* Effect.promise(() => admin.query(`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE ${ours}`))
      yield* Deferred.succeed(held, undefined)
      expect((yield* Fiber.join(running)).status).toBe("completed")
      const seen = yield* Fiber.join(following).pipe(
        Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("the reader did not follow the run to its end") }),
        Effect.ensuring(Fiber.interrupt(following))
      )
      expect(seen.filter((e) => e._tag === "ToolCompleted")).toHaveLength(21)
      expect(seen[seen.length - 1]?._tag).toBe("Completed")
    }), 120_000)

  it.scopedLive("a reader whose poll is an hour is woken by a tool step's appends, which change neither status nor cost", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const first = yield* Deferred.make<void>()
      const last = yield* Deferred.make<void>()
      const seenFirst = yield* Deferred.make<void>()
      const echo = Tool.make({ name: "echo", description: "echo", parameters: Schema.Struct({ i: Schema.Number }), idempotent: true, handler: ({ i }) => Effect.succeed(i) })
      const gate = (name: string, opened: Deferred.Deferred<void>) =>
        Tool.make({ name, description: "waits for the test", parameters: Schema.Struct({}), idempotent: true, handler: () => Effect.as(Deferred.await(opened), 0) })
      const [gate1, gate2] = [gate("gate1", first), gate("gate2", last)]
      // After the run's claim, nothing but tool events until gate2 opens: no status or cost change.
      const steps = Workflow.make({
        name: "gated-steps",
        input: Schema.Null,
        output: Schema.Number,
        run: (_input, ctx) =>
          Effect.gen(function*() {
            yield* ctx.tool(gate1, {})
            yield* ctx.tool(echo, { i: 1 })
            yield* ctx.tool(gate2, {})
            return 1
          })
      })
      const kernelWith = (tools: ReadonlyArray<Tool.Tool>) =>
        Effect.map(
          Layer.build(Kernel.layer({ livePollInterval: "1 hour", workflows: [steps] }).pipe(
            Layer.provideMerge(Layer.mergeAll(PostgresStore.layer({ url, pool: { max: 4 } }), ScriptedModel.layer([]), ToolRegistry.layer(tools)))
          )),
          (context) => Context.get(context, Kernel.Kernel)
        )
      const writer = yield* kernelWith([echo, gate1, gate2])
      const reader = yield* kernelWith([])
      const following = yield* Effect.fork(reader.live({ tenantId: "acme", runId: "gated" }, { waitForStart: true }).pipe(
        Stream.tap((e) => (e._tag === "ToolStarted" && e.tool === "gate1" ? Deferred.succeed(seenFirst, undefined) : Effect.void)),
        Stream.takeUntil((e) => e._tag === "ToolStarted" && e.tool === "gate2"),
        Stream.runCollect,
        Effect.map(Chunk.toReadonlyArray)
      ))
      const running = yield* Effect.fork(writer.execute(steps, { runId: "gated", tenant, input: null }))
      // The reader has read up to gate1's request and waits: what follows reaches it only by the appends' notices.
      yield* Deferred.await(seenFirst)
      yield* Deferred.succeed(first, undefined)
      const seen = yield* Fiber.join(following).pipe(
        Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("the reader was not woken by the tool steps' appends") }),
        Effect.ensuring(Fiber.interrupt(following))
      )
      expect(seen.flatMap((e) => (e._tag === "ToolCompleted" ? [e.tool] : []))).toEqual(["gate1", "echo"])
      yield* Deferred.succeed(last, undefined)
      expect((yield* Fiber.join(running)).status).toBe("completed")
    }), 120_000)
})
