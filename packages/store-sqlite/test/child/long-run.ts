// A long run in its own process, for the bounded-memory test (started with a capped heap):
// `node --max-old-space-size=N --import tsx long-run.ts write|resume|status|replay|verify|open FILE RUN STEPS`. `write`
// appends the paused run (`TestLog.LongRun`), `resume` resumes it with a response, `status` reads where it stands
// (`Artana.status`), `replay` replays it (`kernel.replay`), `verify` checks its chain (`kernel.verify`), `open` only
// opens the store (a baseline).
// Prints one JSON line: {"outcome":"result","result":...,"peakRssMb":...} or {"outcome":"error","error":...}.
import { Artana, EventStore, Kernel, ModelPort, ToolRegistry } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { Cause, Effect, Exit, Layer } from "effect"
import { SqliteStore } from "../../src/index.js"
import { tenant } from "./workflows.js"

const [command, filename, runId, stepsText] = process.argv.slice(2)
if (filename === undefined || runId === undefined || stepsText === undefined) throw new Error("usage: long-run.ts write|resume|status|replay|verify|open FILE RUN STEPS")
const steps = Number(stepsText)

const noModel = ModelPort.make({ defaultModel: "none", generate: () => Effect.dieMessage("a long run calls no model") })
const store = SqliteStore.layer({ filename })
const layer = Layer.provideMerge(
  Kernel.layer({ workflows: [TestLog.LongRun.workflow] }),
  Layer.mergeAll(store, Layer.succeed(ModelPort.ModelPort, noModel), ToolRegistry.layer([]))
)

const program = Effect.gen(function*() {
  switch (command) {
    case "write":
      return yield* Effect.flatMap(EventStore.EventStore, (s) => TestLog.LongRun.write(s, { runId, tenant, steps }))
    case "resume":
      return yield* Effect.flatMap(Kernel.Kernel, (k) => k.resume({ tenantId: tenant.tenantId, runId, workflow: TestLog.LongRun.workflow, response: "approved" }))
    case "status":
      return yield* Artana.status({ tenantId: tenant.tenantId, runId })
    case "replay":
      return yield* Effect.flatMap(Kernel.Kernel, (k) => k.replay(TestLog.LongRun.workflow, { tenantId: tenant.tenantId, runId }))
    case "verify":
      return yield* Effect.flatMap(Kernel.Kernel, (k) => k.verify({ tenantId: tenant.tenantId, runId }))
    default:
      return yield* Effect.flatMap(EventStore.EventStore, (s) => s.getRun(tenant.tenantId, runId))
  }
})

const exit = await Effect.runPromiseExit(Effect.provide(program, layer))
const peakRssMb = process.resourceUsage().maxRSS / 1024
const output = Exit.match(exit, {
  onSuccess: (result) => ({ outcome: "result", result, peakRssMb }),
  onFailure: (cause) => ({ outcome: "error", error: Cause.pretty(cause), peakRssMb })
})
process.stdout.write(`${JSON.stringify(output)}\n`)
process.exitCode = Exit.isSuccess(exit) ? 0 : 3
