// A live reader on one pool follows a run another pool writes, woken by NOTIFY (`RunNotices`): its backstop poll is an
// hour, so only the writer's notices can bring it the run's deltas and events in the test's time.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { Chunk, Context, Effect, Fiber, Layer, Stream } from "effect"
import { Kernel, type Live, Tenant, ToolRegistry } from "@artana/core"
import { ScriptedModel, TestWorkflows } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import pgDriver from "pg"

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

  it.scoped("a run nobody follows is written without a notice: its appends and deltas NOTIFY nothing", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const writer = yield* kernelOn(url, [ScriptedModel.text("one two three", { deltas: ["one ", "two ", "three"] })])
      // A bare session listening on the runs channel hears every notice sent on it, in commit order.
      const heard: Array<string> = []
      const listener = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new pgDriver.Client({ connectionString: url })
          await client.connect()
          client.on("notification", (n) => void heard.push(n.payload ?? ""))
          await client.query(`LISTEN "${PostgresStore.runsChannel()}"`)
          return client
        }),
        (client) => Effect.promise(() => client.end())
      )
      expect((yield* writer.execute(TestWorkflows.chatThenPause, { runId: "quiet", tenant, input: "q" })).status).toBe("paused")
      // A marker sent after the run's last commit arrives after every notice the run's writes sent.
      yield* Effect.promise(() => listener.query("SELECT pg_notify($1, 'marker')", [PostgresStore.runsChannel()]))
      while (!heard.includes("marker")) yield* Effect.sleep("20 millis")
      expect(heard).toEqual(["marker"])
    }), 120_000)
})

