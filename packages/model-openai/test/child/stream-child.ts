// The process the streaming crash test kills: `node --import tsx stream-child.ts DB BASE_URL RUN_ID`. It starts the
// run on a SQLite file and streams its model call from the test's server, until it is SIGKILLed mid-stream.
import { Kernel, Tenant, ToolRegistry } from "@artana/core"
import { TestWorkflows } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { Effect, Layer } from "effect"
import { OpenAiModel } from "../../src/index.js"

const { chatThenPause } = TestWorkflows
const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
const [filename, baseURL, runId] = process.argv.slice(2)
if (filename === undefined || baseURL === undefined || runId === undefined) throw new Error("usage: stream-child.ts DB BASE_URL RUN_ID")

const layer = Layer.provideMerge(
  Kernel.layer({ workflows: [chatThenPause] }),
  Layer.mergeAll(SqliteStore.layer({ filename }), OpenAiModel.layer({ baseURL, stream: true }), ToolRegistry.layer([]))
)
const result = await Effect.runPromise(Effect.flatMap(Kernel.Kernel, (k) => k.execute(chatThenPause, { runId, tenant, input: "Why stream?" })).pipe(Effect.provide(layer)))
process.stdout.write(`${JSON.stringify(result)}\n`)
