// The agent of the steering tests, run by `child.ts` in its own process and replayed by the test.
import { Effect, Layer, Schema } from "effect"
import { type Errors, type EventStore, Kernel, Tenant, Tool, ToolRegistry } from "@artana/core"
import { AutonomousAgent, MemoryStore } from "@artana/agent"
import { OpenAiModel } from "@artana/model-openai"
import { SqliteStore } from "@artana/store-sqlite"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 10 })

/** Its tool; `hold`: the tool prints `{"outcome":"tool"}` and never returns (the test kills the process there). */
const lookAround = (hold: boolean) =>
  Tool.make({
    name: "look_around",
    description: "Looks around.",
    parameters: Schema.Struct({}),
    idempotent: true,
    handler: () => (hold ? Effect.zipRight(Effect.sync(() => console.log(JSON.stringify({ outcome: "tool" }))), Effect.never) : Effect.succeed("nothing new"))
  })

/** An agent that takes steering messages between turns. */
export const analyst = (hold = false) =>
  AutonomousAgent.make({ name: "analyst", instructions: "You analyse sales.", tools: [lookAround(hold)], memory: false, steering: true })

/** The kernel on the SQLite file `db`, its model the real `openai` SDK streaming from `url`. */
export const layer = (
  db: string,
  url: string,
  hold = false
): Layer.Layer<AutonomousAgent.Requirements | EventStore.EventStore, Errors.StoreUnavailable | Errors.SchemaMismatch> =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(
      SqliteStore.layer({ filename: db }),
      OpenAiModel.layer({ baseURL: url, retryBaseDelay: "1 millis", stream: true, defaultModel: "gpt-4o-mini" }),
      ToolRegistry.layer([lookAround(hold)]),
      MemoryStore.layerMemory
    )
  )
