// What a resume promotes: `node --import tsx scale/tools/promoted.child.ts FILE RUN OUT.json` (started in bench/) resumes
// the run (as long-run.child.ts's `resume`) under V8's sampling heap profiler with the objects a young collection freed
// left out, so the profile written to OUT.json (Chrome DevTools' .heapprofile format) holds what survived the young
// generation: objects still alive, and those only a full GC freed, by the stack that allocated them. Prints its peak
// RSS. See ../README.md, "What a resume's peak RSS is made of".
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import { Effect, Layer } from "effect"
import { Kernel, ModelPort, ToolRegistry } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant } from "../../fixtures.js"

const [filename, runId, out] = process.argv.slice(2)
if (filename === undefined || runId === undefined || out === undefined) throw new Error("usage: promoted.child.ts FILE RUN OUT.json")
const noModel = ModelPort.make({ defaultModel: "none", generate: () => Effect.dieMessage("no model") })
const layer = Layer.provideMerge(
  Kernel.layer({ workflows: [TestLog.LongRun.workflow] }),
  Layer.mergeAll(SqliteStore.layer({ filename }), Layer.succeed(ModelPort.ModelPort, noModel), ToolRegistry.layer([]))
)
const session = new Session()
session.connect()
await session.post("HeapProfiler.enable")
const program = Effect.gen(function*() {
  const kernel = yield* Kernel.Kernel
  yield* Effect.promise(() =>
    session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false })
  )
  const result = yield* kernel.resume({ tenantId: tenant.tenantId, runId, workflow: TestLog.LongRun.workflow, response: "approved" })
  const profile = yield* Effect.promise(() => session.post("HeapProfiler.stopSampling"))
  writeFileSync(out, JSON.stringify(profile))
  return result.status
})
await Effect.runPromise(Effect.provide(program, layer))
process.stdout.write(`${JSON.stringify({ peakRssMb: process.resourceUsage().maxRSS / 1024 })}\n`)
