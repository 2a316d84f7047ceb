// Shared pieces of the agent tests: a tenant, tools that count their side effects, a model that answers by a
// function of the request (built through the real ModelPort.make), and the kernel layer.
import { Effect, Layer, Schema } from "effect"
import { type Chat, type Errors, type Event, EventStore, Kernel, Middleware, ModelPort, Pricing, Tenant, Tool, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { MemoryStore } from "@artana/agent"

export const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: ["sales:read"], budgetUsdLimit: 10 })

/** Side effects of the test tools, one line each: `<tool> <idempotencyKey> <args>`. */
export const makeEffects = () => {
  const lines: Array<string> = []
  return { lines, count: (tool: string) => lines.filter((l) => l.startsWith(`${tool} `)).length }
}

export const makeTools = (effects = makeEffects()) => {
  const querySales = Tool.make({
    name: "query_sales",
    description: "Sales of a region in a quarter, in EUR. Regions: EMEA, APAC, AMER.",
    parameters: Schema.Struct({ region: Schema.String, quarter: Schema.String }),
    success: Schema.Struct({ region: Schema.String, quarter: Schema.String, revenue: Schema.Number }),
    requiresCapability: "sales:read",
    idempotent: true,
    handler: ({ quarter, region }, ctx) =>
      Effect.sync(() => {
        effects.lines.push(`query_sales ${ctx.idempotencyKey} ${region}/${quarter}`)
        return { region, quarter, revenue: region === "EMEA" ? 1_200_000 : 800_000 }
      })
  })
  const sendReport = Tool.make({
    name: "send_report",
    description: "Sends the report by email (not idempotent: each call sends one email).",
    parameters: Schema.Struct({ to: Schema.String, body: Schema.String }),
    handler: ({ to }, ctx) =>
      Effect.sync(() => {
        effects.lines.push(`send_report ${ctx.idempotencyKey} ${to}`)
        return "sent"
      })
  })
  return { effects, querySales, sendReport, all: [querySales, sendReport] }
}

/** The test models, free (said in code: the kernel refuses a model it cannot price under a budget). */
export const freeModels: Pricing.PriceTable = { scripted: Pricing.free, responder: Pricing.free, cheap: Pricing.free, small: Pricing.free }

/** What a responder returns for one request. */
export interface Answer {
  readonly content?: string | null | undefined
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }> | undefined
  readonly costUsd?: number | undefined
}

/**
 * A model that answers each request with `respond(request, n)` (n from 0), through the real `ModelPort.make`, and
 * records every request. For runs whose shape depends on the requests (when compaction happens, what memory says).
 */
export const makeResponder = (respond: (request: ModelPort.ModelRequest, n: number) => Answer) => {
  const requests: Array<ModelPort.ModelRequest> = []
  const port = ModelPort.make({
    defaultModel: "responder",
    prices: freeModels,
    generate: (request) =>
      Effect.sync(() => {
        const n = requests.length
        requests.push(request)
        const answer = respond(request, n)
        const toolCalls = (answer.toolCalls ?? []).map((c, i) => ({
          id: `call_${n}_${i}`,
          name: c.name,
          arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments)
        }))
        return {
          model: request.model,
          message: toolCalls.length > 0
            ? { role: "assistant" as const, content: answer.content ?? null, toolCalls }
            : { role: "assistant" as const, content: answer.content ?? "" },
          usage: { inputTokens: ModelPort.approximateTokens(request.messages), outputTokens: 10 },
          costUsd: answer.costUsd ?? 0
        }
      })
  })
  return { port, requests, layer: Layer.succeed(ModelPort.ModelPort, port) }
}

/** True when the request is a compaction summary's (it has no tools and the summarizer's instructions). */
export const isSummaryRequest = (request: ModelPort.ModelRequest) =>
  request.messages[0]?.role === "system" && request.messages[0].content.startsWith("You keep the running memory")

/** The system prompt of a request. */
export const systemOf = (request: ModelPort.ModelRequest) => request.messages[0]?.content ?? ""

/** The last message of a request. */
export const lastOf = (request: ModelPort.ModelRequest): Chat.ChatMessage | undefined => request.messages[request.messages.length - 1]

/** The kernel over an in-memory log and memory (unless given), with the model, tools and middleware. */
export const agentLayer = <M>(
  model: Layer.Layer<M>,
  options: {
    readonly tools?: ReadonlyArray<Tool.Tool> | undefined
    readonly middleware?: ReadonlyArray<Middleware.Interceptor> | undefined
    readonly store?: Layer.Layer<EventStore.EventStore> | undefined
    readonly memory?: Layer.Layer<MemoryStore.MemoryStore> | undefined
  } = {}
) =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(
      options.store ?? EventStore.layerMemory,
      model,
      ToolRegistry.layer(options.tools ?? []),
      Middleware.layer(options.middleware ?? []),
      options.memory ?? MemoryStore.layerMemory
    )
  )

/** A scripted model layer (fixed replies in order). */
export const scripted = (replies: ReadonlyArray<ScriptedModel.Reply>) => ScriptedModel.layer(replies, { prices: freeModels })

type StoreRead<A> = Effect.Effect<A, Errors.RunNotFound | Errors.StoreError, EventStore.EventStore>

export const eventsOf = (runId: string, tenantId = tenant.tenantId): StoreRead<ReadonlyArray<Event.Event>> =>
  Effect.flatMap(EventStore.EventStore, (s) => s.readEvents(tenantId, runId))

/** `Type@stepKey` of every event of a run. */
export const stepsOf = (runId: string): StoreRead<ReadonlyArray<string>> =>
  Effect.map(eventsOf(runId), (events) => events.map((e) => `${e.type}@${e.stepKey}`))
