// Shared by the PII kernel tests: a kernel over a given store, and a tool whose handler can play a process dying in it.
import { Effect, Layer, Schema } from "effect"
import { EventStore, Kernel, Middleware, type ModelPort, Tool, ToolRegistry } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"

export const kernelLayer = (
  script: ReadonlyArray<ScriptedModel.Reply>,
  tools: ReadonlyArray<Tool.Tool>,
  middleware: ReadonlyArray<Middleware.Interceptor>,
  store: Layer.Layer<EventStore.EventStore> = EventStore.layerMemory
): Layer.Layer<Kernel.Kernel | EventStore.EventStore | ModelPort.ModelPort | ScriptedModel.ScriptedModel | ToolRegistry.ToolRegistry | Middleware.Middleware> =>
  Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(store, ScriptedModel.layer(script), ToolRegistry.layer(tools), Middleware.layer(middleware))
  )

/** `notify`: records whom it was given; while `crash.on`, the execution stops in it with no outcome written. */
export const notifyTool = (received: Array<string>, crash: { on: boolean }, description = "Notifies a person") =>
  Tool.make({
    name: "notify",
    description,
    parameters: Schema.Struct({ to: Schema.String }),
    idempotent: true,
    handler: ({ to }) => Effect.suspend(() => (received.push(`notify:${to}`), crash.on ? Effect.interrupt : Effect.succeed("ok")))
  })
