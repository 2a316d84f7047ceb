// Plugins: config validated by the plugin's schema, tools made from it, consistency checks, loading by package name
// from the host's node_modules, and the test kit running a tool through a real kernel.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import { EventStore, Kernel, Tenant } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { definePlugin, defineTool, Plugin, Plugins } from "@artana/plugin-sdk"
import { PluginTest } from "@artana/plugin-sdk/testing"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { resolve } from "import-meta-resolve"

const weather = definePlugin({
  name: "artana-plugin-weather",
  version: "1.2.0",
  capabilities: ["weather:read"],
  configSchema: Schema.Struct({ units: Schema.Literal("metric", "imperial"), apiKey: Schema.optional(Schema.Redacted(Schema.String)) }),
  tools: (config) => [
    defineTool({
      name: "weather.forecast",
      description: "Tomorrow's forecast for a city",
      parameters: { type: "object", properties: { city: { type: "string", minLength: 1 } }, required: ["city"], additionalProperties: false },
      requiresCapability: "weather:read",
      idempotent: true,
      handler: (args: { readonly city: string }) => Effect.succeed({ city: args.city, high: config.units === "metric" ? 21 : 70, units: config.units })
    })
  ]
})

describe("Plugin.load", () => {
  it.effect("decodes the config with the plugin's schema and makes the tools from it", () =>
    Effect.gen(function*() {
      const loaded = yield* Plugin.load(weather, { units: "imperial" })
      expect(loaded).toMatchObject({ name: "artana-plugin-weather", version: "1.2.0", capabilities: ["weather:read"], middleware: [] })
      expect(loaded.tools.map((t) => [t.name, t.requiresCapability, t.idempotent])).toEqual([["weather.forecast", "weather:read", true]])
    }))

  it.effect("a config that does not match is InvalidPluginConfig naming the path; unknown fields are refused", () =>
    Effect.gen(function*() {
      expect(yield* Effect.flip(Plugin.load(weather, { units: "kelvin" }))).toMatchObject({ _tag: "InvalidPluginConfig", plugin: "artana-plugin-weather", path: "$.units" })
      expect(yield* Effect.flip(Plugin.load(weather, { units: "metric", token: "x" }))).toMatchObject({ _tag: "InvalidPluginConfig", path: "$.token" })
      expect(yield* Effect.flip(Plugin.load(weather, null))).toMatchObject({ _tag: "InvalidPluginConfig", path: "$" })
    }))

  it.effect("a plugin whose tools need a capability it does not declare, or that names two tools alike, is invalid", () =>
    Effect.gen(function*() {
      const tool = (name: string, capability?: string) =>
        defineTool({ name, description: "x", parameters: Schema.Struct({}), requiresCapability: capability, handler: () => Effect.succeed(null) })
      const sneaky = definePlugin({ name: "sneaky", version: "1.0.0", configSchema: Schema.Struct({}), tools: [tool("a", "fs:write")] })
      expect((yield* Effect.flip(Plugin.load(sneaky, {}))).message).toContain("requires capability \"fs:write\", which the plugin does not declare")
      const twice = definePlugin({ name: "twice", version: "1.0.0", configSchema: Schema.Struct({}), tools: [tool("a"), tool("a")] })
      expect((yield* Effect.flip(Plugin.load(twice, {}))).message).toContain("two tools are named \"a\"")
    }))

  it.effect("a tool factory that fails or throws is PluginSetupFailed", () =>
    Effect.gen(function*() {
      const failing = definePlugin({ name: "failing", version: "1.0.0", configSchema: Schema.Struct({}), tools: () => Effect.fail(new Error("no credentials")) })
      expect(yield* Effect.flip(Plugin.load(failing, {}))).toMatchObject({ _tag: "PluginSetupFailed", reason: "making its tools failed: no credentials" })
      const throwing = definePlugin({ name: "throwing", version: "1.0.0", configSchema: Schema.Struct({}), tools: () => { throw new Error("boom") } })
      expect(yield* Effect.flip(Plugin.load(throwing, {}))).toMatchObject({ _tag: "PluginSetupFailed", reason: "making its tools threw: boom" })
    }))
})

describe("Plugins.loadPackage", () => {
  const host = fs.mkdtempSync(path.join(os.tmpdir(), "artana-plugin-host-"))
  afterAll(() => fs.rmSync(host, { recursive: true, force: true }))
  // A package in the host's node_modules, as `pnpm add` would put it. It brings its own copy of what it imports
  // (here: absolute imports of this repo's builds), like a plugin built against another copy of the SDK.
  const coreUrl = resolve("@artana/core", import.meta.url)
  const effectUrl = resolve("effect", import.meta.url)
  const write = (name: string, source: string) => {
    const dir = path.join(host, "node_modules", name)
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", type: "module", exports: "./index.js" }))
    fs.writeFileSync(path.join(dir, "index.js"), source)
  }
  write("artana-plugin-echo", `
import { Tool } from ${JSON.stringify(coreUrl)}
import { Effect, Schema } from ${JSON.stringify(effectUrl)}
export default {
  [Symbol.for("@artana/plugin-sdk/Plugin")]: true,
  name: "artana-plugin-echo",
  version: "1.0.0",
  capabilities: [],
  configSchema: Schema.Struct({ prefix: Schema.String }),
  tools: (config) => [Tool.make({ name: "echo.say", description: "Echoes", parameters: Schema.Struct({ text: Schema.String }), handler: ({ text }) => Effect.succeed(config.prefix + text) })]
}
`)
  write("not-a-plugin", "export default { hello: 'world' }\n")
  write("broken-plugin", "export default (\n")

  it.effect("finds the package from the host's directory and loads it with its config", () =>
    Effect.gen(function*() {
      const loaded = yield* Plugins.loadPackage("artana-plugin-echo", { prefix: "> " }, { from: host })
      expect(loaded.tools.map((t) => t.name)).toEqual(["echo.say"])
      expect(yield* Effect.flip(Plugins.loadPackage("artana-plugin-echo", {}, { from: host }))).toMatchObject({ _tag: "InvalidPluginConfig", path: "$.prefix" })
    }))

  it.effect("layerPackages gives a host's whole plugin set as the kernel's tools and middleware", () =>
    Effect.gen(function*() {
      const result = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const tenant = Tenant.TenantContext.make({ tenantId: "t", capabilities: [], budgetUsdLimit: 1 })
        return yield* kernel.callTool({ runId: "echo", tenant, tool: "echo.say", args: { text: "hi" } })
      }).pipe(Effect.provide(Layer.provideMerge(
        Kernel.layer(),
        Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([]), Plugins.layerPackages([{ package: "artana-plugin-echo", config: { prefix: "> " } }], { from: host }))
      )))
      expect(result).toMatchObject({ status: "completed", output: "> hi" })
      const missing = yield* Effect.flip(Layer.build(Plugins.layerPackages([{ package: "artana-plugin-nowhere", config: {} }], { from: host })).pipe(Effect.scoped))
      expect(missing).toMatchObject({ _tag: "PluginNotFound", package: "artana-plugin-nowhere" })
    }))

  it.effect("a missing package, a default export that is not a plugin and a module that does not parse are typed errors", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(Plugins.loadPackage("artana-plugin-nowhere", {}, { from: host }))
      expect(missing).toMatchObject({ _tag: "PluginNotFound", package: "artana-plugin-nowhere", from: host })
      expect(missing.message).toContain("pnpm add artana-plugin-nowhere")
      expect(yield* Effect.flip(Plugins.loadPackage("not-a-plugin", {}, { from: host }))).toMatchObject({ _tag: "InvalidPlugin", plugin: "not-a-plugin" })
      expect(yield* Effect.flip(Plugins.loadPackage("broken-plugin", {}, { from: host }))).toMatchObject({ _tag: "PluginNotFound", package: "broken-plugin" })
    }))
})

describe("PluginTest", () => {
  it.effect("runs a tool through a real kernel in one call: the result and the run's log", () =>
    Effect.gen(function*() {
      const { events, result } = yield* PluginTest.run({ plugin: weather, config: { units: "metric" }, tool: "weather.forecast", args: { city: "Oslo" } })
      expect(result).toEqual(Either.right({ city: "Oslo", high: 21, units: "metric" }))
      expect(events.map((e) => e.type)).toEqual(["RunStarted", "ToolRequested", "ToolCompleted", "RunCompleted"])
      expect(events[1]!.payload).toMatchObject({ _tag: "ToolRequested", tool: "weather.forecast", arguments: "{\"city\":\"Oslo\"}" })
    }))

  it.effect("invalid arguments fail before the tool runs; a tenant without the capability is denied", () =>
    Effect.gen(function*() {
      const invalid = yield* PluginTest.run({ plugin: weather, config: { units: "metric" }, tool: "weather.forecast", args: { town: "Oslo" } })
      // Refused (`city` is missing; `town` is not a property), logged like a model's call, and nothing ran.
      const error = Either.isLeft(invalid.result) ? invalid.result.left : undefined
      expect([error?._tag, error?._tag === "InvalidToolArguments" ? error.path : error?.message]).toEqual(["InvalidToolArguments", "$.city"])
      expect(invalid.events.map((e) => e.payload)).toMatchObject([{ _tag: "RunStarted" }, { _tag: "ToolRequested" }, { _tag: "ToolFailed", kind: "invalid_arguments", path: "$.city" }, { _tag: "RunFailed" }])
      const tenant = Tenant.TenantContext.make({ tenantId: "t", capabilities: [], budgetUsdLimit: 1 })
      const denied = yield* PluginTest.run({ plugin: weather, config: { units: "metric" }, tool: "weather.forecast", args: { city: "Oslo" }, tenant })
      expect(Either.isLeft(denied.result) && denied.result.left).toMatchObject({ _tag: "PolicyDenied", capability: "weather:read" })
      expect(denied.events.map((e) => e.payload._tag)).toContain("PolicyDenied")
    }))

  it.effect("takes the tenant as plain data, as every other call does; a bad one is InvalidTenant and runs nothing", () =>
    Effect.gen(function*() {
      const plain = yield* PluginTest.run({
        plugin: weather, config: { units: "metric" }, tool: "weather.forecast", args: { city: "Oslo" },
        tenant: { tenantId: "plain", capabilities: ["weather:read"], budgetUsdLimit: 1 }
      })
      expect(plain.result).toEqual(Either.right({ city: "Oslo", high: 21, units: "metric" }))
      expect(plain.events.map((e) => e.tenantId)).toEqual(["plain", "plain", "plain", "plain"])
      const bad = yield* Effect.flip(PluginTest.run({
        plugin: weather, config: { units: "metric" }, tool: "weather.forecast", args: { city: "Oslo" },
        tenant: { tenantId: "bad", capabilities: ["weather:read"], budgetUsdLimit: -1 }
      }))
      expect(bad).toMatchObject({ _tag: "InvalidTenant" })
      expect(bad.message).toContain("budgetUsdLimit")
    }))

  it.effect("a plugin's handler runs with none of the host's services, its span nested under the call's", () =>
    Effect.gen(function*() {
      const nosy = definePlugin({
        name: "nosy",
        version: "1.0.0",
        configSchema: Schema.Struct({}),
        tools: [
          defineTool({
            name: "nosy.peek",
            description: "Looks for the host's event store",
            parameters: Schema.Struct({}),
            handler: () =>
              Effect.gen(function*() {
                const store = yield* Effect.serviceOption(EventStore.EventStore)
                const span = yield* Effect.option(Effect.currentSpan)
                return { store: store._tag, span: span._tag === "Some" ? span.value.name : null }
              })
          })
        ]
      })
      // The kernel runs with an event store in its context; the handler does not see it.
      const { result } = yield* PluginTest.run({ plugin: nosy, config: {}, tool: "nosy.peek", args: {} }).pipe(Effect.withSpan("host.call"))
      expect(result).toEqual(Either.right({ store: "None", span: "Kernel.execute" }))
    }))

  it("runPromise serves plugin authors who do not use Effect", async () => {
    const { result } = await PluginTest.runPromise({ plugin: weather, config: { units: "imperial" }, tool: "weather.forecast", args: { city: "Boston" } })
    expect(result).toEqual(Either.right({ city: "Boston", high: 70, units: "imperial" }))
    await expect(PluginTest.runPromise({ plugin: weather, config: {}, tool: "weather.forecast", args: { city: "x" } })).rejects.toThrow(/invalid config/)
  })
})
