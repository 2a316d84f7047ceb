// A run as it happens, on PostgreSQL: the deltas of a streamed call are kept in the database while the run is live,
// so a kernel on another pool (another process, another machine) reads them as the kernel that runs it does.
import { describe, expect, it } from "@effect/vitest"
import { inject } from "vitest"
import { Chunk, Context, Effect, Layer, Stream } from "effect"
import { Kernel, type Live, Tenant, ToolRegistry } from "@artana/core"
import { ScriptedModel, TestWorkflows } from "@artana/core/testing"
import { PostgresStore } from "@artana/store-postgres"
import { PgTest } from "@artana/store-postgres/testing"
import { LiveStoreSuite } from "@artana/core/testing/suites"
import { freshStore } from "./pg.js"

const pg = PgTest.server(inject("artanaPg"))
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

/** A kernel on its own `PostgresStore` pool over `url`. */
const kernelOn = (url: string, script: ReadonlyArray<ScriptedModel.Reply>) =>
  Effect.map(
    Layer.build(Kernel.layer({ livePollInterval: "10 millis" }).pipe(
      Layer.provideMerge(Layer.mergeAll(PostgresStore.layer({ url, pool: { max: 4 } }), ScriptedModel.layer(script), ToolRegistry.layer([])))
    )),
    (context) => Context.get(context, Kernel.Kernel)
  )

const liveUntilPaused = (kernel: Kernel.Service, runId: string) =>
  kernel.live({ tenantId: "acme", runId }).pipe(Stream.takeUntil((e) => e._tag === "Paused"), Stream.runCollect, Effect.map(Chunk.toReadonlyArray))

const texts = (events: ReadonlyArray<Live.LiveEvent>) => events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))

describe.skipIf(pg.url === undefined)(`live runs on PostgreSQL (${pg.description})`, () => {
  it.scoped("a kernel on another pool reads a live run's deltas, as the kernel that ran it does", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.freshDatabase(pg.url!)
      const writer = yield* kernelOn(url, [ScriptedModel.text("one two three", { deltas: ["one ", "two ", "three"] })])
      const reader = yield* kernelOn(url, [])
      expect((yield* writer.execute(TestWorkflows.chatThenPause, { runId: "shared", tenant, input: "q" })).status).toBe("paused")
      const seen = yield* liveUntilPaused(reader, "shared")
      expect(texts(seen)).toEqual(["one ", "two ", "three"])
      expect(seen).toEqual(yield* liveUntilPaused(writer, "shared"))
    }), 60_000)
})

// How long the database keeps a run's deltas (core's LiveStoreSuite): while the run is live, and no longer.
describe.skipIf(pg.url === undefined)(`live-delta retention on PostgreSQL (${pg.description})`, () => {
  LiveStoreSuite.suite("postgres", () => freshStore(pg.url!))
  LiveStoreSuite.suite("postgres with tablePrefix", () => freshStore(pg.url!, { tablePrefix: "artana_" }))
})
