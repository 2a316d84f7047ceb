/**
 * Plugins: a name, a version, the capabilities its tools require, a config schema, and the tools (and optionally
 * middleware, such as a policy engine) it makes from a validated config. A plugin gets its config and nothing else
 * from the host: no store, no model, no secrets unless the host puts them in the config.
 *
 * @since 0.1.0
 */
import { type Middleware, Tool } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { InvalidPlugin, InvalidPluginConfig, PluginSetupFailed } from "./PluginErrors.js"

/** Marks a plugin, across copies of this package (a plugin package may bundle its own). */
export const TypeId: unique symbol = Symbol.for("@artana/plugin-sdk/Plugin")

/** What a plugin's tools or middleware are made from: its config, decoded. */
type Factory<C, A> = ReadonlyArray<A> | ((config: C) => ReadonlyArray<A> | Effect.Effect<ReadonlyArray<A>, unknown>)

export interface Plugin<C = unknown, CI = unknown> {
  readonly [TypeId]: true
  /** The npm package name, conventionally. */
  readonly name: string
  readonly version: string
  /** Every capability the plugin's tools require: a host grants them to tenants knowingly. */
  readonly capabilities: ReadonlyArray<string>
  /** Decodes the config the host gives (`Schema.Struct({})` for a plugin that takes none). */
  readonly configSchema: Schema.Schema<C, CI>
  readonly tools: Factory<C, Tool.Tool>
  /** Interceptors the plugin's tools need around them (a policy engine), in order. */
  readonly middleware?: Factory<C, Middleware.Interceptor> | undefined
}

export interface PluginOptions<C, CI> {
  readonly name: string
  readonly version: string
  readonly capabilities?: ReadonlyArray<string> | undefined
  /** Decodes the config the host gives (`Schema.Struct({})` for a plugin that takes none). */
  readonly configSchema: Schema.Schema<C, CI>
  readonly tools: Factory<C, Tool.Tool>
  readonly middleware?: Factory<C, Middleware.Interceptor> | undefined
}

/** A loaded plugin: its tools and middleware, made from its validated config. */
export interface Loaded {
  readonly name: string
  readonly version: string
  readonly capabilities: ReadonlyArray<string>
  readonly tools: ReadonlyArray<Tool.Tool>
  readonly middleware: ReadonlyArray<Middleware.Interceptor>
}

/**
 * Defines a plugin; a plugin package's default export is its plugin.
 *
 * @example
 * export default definePlugin({
 *   name: "artana-plugin-weather",
 *   version: "1.0.0",
 *   capabilities: ["weather:read"],
 *   configSchema: Schema.Struct({ units: Schema.Literal("metric", "imperial") }),
 *   tools: (config) => [forecast(config.units)]
 * })
 */
export const definePlugin = <C, CI>(options: PluginOptions<C, CI>): Plugin<C, CI> => ({
  [TypeId]: true,
  name: options.name,
  version: options.version,
  capabilities: options.capabilities ?? [],
  configSchema: options.configSchema,
  tools: options.tools,
  middleware: options.middleware
})

/** Whether `u` is a plugin (made by `definePlugin` of any copy of this package). */
export const isPlugin = (u: unknown): u is Plugin =>
  Predicate.hasProperty(u, TypeId) && Predicate.hasProperty(u, "name") && typeof u.name === "string" &&
  Predicate.hasProperty(u, "configSchema") && Schema.isSchema(u.configSchema) && Predicate.hasProperty(u, "tools")

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : typeof e === "string" ? e : String(e))

/** The plugin's tools or middleware from its decoded config; a factory that fails or throws is `PluginSetupFailed`. */
const made = <C, CI, A>(plugin: Plugin<C, CI>, what: string, factory: Factory<C, A> | undefined, config: C) =>
  Effect.suspend(() => {
    if (factory === undefined) return Effect.succeed<ReadonlyArray<A>>([])
    if (typeof factory !== "function") return Effect.succeed(factory)
    const out = factory(config)
    return Effect.isEffect(out) ? out : Effect.succeed(out)
  }).pipe(
    Effect.mapError((e) => new PluginSetupFailed({ plugin: plugin.name, reason: `making its ${what} failed: ${messageOf(e)}`, cause: e })),
    Effect.catchAllDefect((defect) => Effect.fail(new PluginSetupFailed({ plugin: plugin.name, reason: `making its ${what} threw: ${messageOf(defect)}`, cause: defect })))
  )

/**
 * Validates `config` with the plugin's schema and makes its tools and middleware. Checks the plugin's own
 * consistency: unique tool names, every required capability declared.
 */
export const load = <C, CI>(plugin: Plugin<C, CI>, config: unknown): Effect.Effect<Loaded, InvalidPluginConfig | InvalidPlugin | PluginSetupFailed> =>
  Effect.gen(function*() {
    const decoded = Schema.decodeUnknownEither(plugin.configSchema)(config, { errors: "first", onExcessProperty: "error" })
    if (Either.isLeft(decoded)) {
      const issue = Tool.firstIssue(decoded.left)
      return yield* new InvalidPluginConfig({ plugin: plugin.name, path: issue.path, reason: issue.reason })
    }
    const tools = yield* made(plugin, "tools", plugin.tools, decoded.right)
    const middleware = yield* made(plugin, "middleware", plugin.middleware, decoded.right)
    const names = new Set<string>()
    for (const tool of tools) {
      if (names.has(tool.name)) return yield* new InvalidPlugin({ plugin: plugin.name, reason: `two tools are named "${tool.name}"` })
      names.add(tool.name)
      if (tool.requiresCapability !== undefined && !plugin.capabilities.includes(tool.requiresCapability)) {
        return yield* new InvalidPlugin({
          plugin: plugin.name,
          reason: `tool "${tool.name}" requires capability "${tool.requiresCapability}", which the plugin does not declare in its capabilities`
        })
      }
    }
    return { name: plugin.name, version: plugin.version, capabilities: plugin.capabilities, tools, middleware }
  }).pipe(Effect.withSpan("Plugin.load", { attributes: { plugin: plugin.name } }))
