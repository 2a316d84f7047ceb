/**
 * Loading plugins by npm package name, and putting their tools and middleware in front of a kernel.
 *
 * A package name is resolved with Node's ESM algorithm (the `import-meta-resolve` library) from the host's
 * directory (`from`, default the working directory), so a plugin installed in the application's `node_modules`
 * is found wherever this SDK is installed; its default export must be a plugin.
 *
 * @since 0.1.0
 */
import { Middleware, type Tool, ToolRegistry } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { resolve } from "import-meta-resolve"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { isPlugin, load, type Loaded, type Plugin } from "./Plugin.js"
import { InvalidPlugin, type InvalidPluginConfig, PluginNotFound, type PluginSetupFailed } from "./PluginErrors.js"

export interface LoadOptions {
  /** The directory the package is looked up from (its `node_modules`, then its parents'). Default the working directory. */
  readonly from?: string | undefined
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** Imports the package `name` (as the host at `from` would) and returns its default export, checked to be a plugin. */
export const importPackage = (name: string, options: LoadOptions = {}): Effect.Effect<Plugin, PluginNotFound | InvalidPlugin> =>
  Effect.gen(function*() {
    const from = path.resolve(options.from ?? process.cwd())
    // A file URL inside the directory: resolution starts at its node_modules.
    const parent = pathToFileURL(path.join(from, "__artana_plugin_host__.js")).href
    const url = yield* Effect.try({
      try: () => resolve(name, parent),
      catch: (cause) => new PluginNotFound({ package: name, from, reason: messageOf(cause) })
    })
    const module = yield* Effect.tryPromise({
      try: (): Promise<{ readonly default?: unknown }> => import(url),
      catch: (cause) => new PluginNotFound({ package: name, from, reason: `importing ${url} failed: ${messageOf(cause)}` })
    })
    if (!isPlugin(module.default)) {
      return yield* new InvalidPlugin({ plugin: name, reason: "its default export is not a plugin (export default definePlugin({ ... }))" })
    }
    return module.default
  })

/**
 * Loads the plugin package `name` with `config`: imports it, validates the config with its schema and makes its
 * tools and middleware.
 *
 * @example
 * const weather = yield* Plugins.loadPackage("artana-plugin-weather", { units: "metric" })
 */
export const loadPackage = (
  name: string,
  config: unknown,
  options: LoadOptions = {}
): Effect.Effect<Loaded, PluginNotFound | InvalidPlugin | InvalidPluginConfig | PluginSetupFailed> =>
  Effect.flatMap(importPackage(name, options), (plugin) => load(plugin, config)).pipe(
    Effect.withSpan("Plugins.loadPackage", { attributes: { package: name } })
  )

export interface LayerOptions {
  /** Tools of the host's own, registered next to the plugins'. */
  readonly tools?: ReadonlyArray<Tool.Tool> | undefined
  /** The host's own interceptors, run before the plugins' (a PII scrubber, a quota). */
  readonly middleware?: ReadonlyArray<Middleware.Interceptor> | undefined
}

/**
 * The `ToolRegistry` and the `Middleware` chain for loaded plugins: the host's tools and the plugins' tools, and the
 * host's interceptors followed by each plugin's, in the order the plugins are given.
 */
export const layer = (
  plugins: ReadonlyArray<Loaded>,
  options: LayerOptions = {}
): Layer.Layer<ToolRegistry.ToolRegistry | Middleware.Middleware> =>
  Layer.merge(
    ToolRegistry.layer([...(options.tools ?? []), ...plugins.flatMap((p) => p.tools)]),
    Middleware.layer([...(options.middleware ?? []), ...plugins.flatMap((p) => p.middleware)])
  )

/** A plugin package to load, and the config to give it. */
export interface PackageSpec {
  readonly package: string
  readonly config: unknown
}

/**
 * Loads plugin packages by name and gives their `ToolRegistry` and `Middleware` (see `layer`), in the order given:
 * a host's whole plugin set in one layer. Any package that cannot be loaded fails the layer with its typed error.
 *
 * @example
 * const ToolsLive = Plugins.layerPackages([
 *   { package: "artana-plugin-weather", config: { units: "metric" } },
 *   { package: "artana-plugin-template", config: { base: "EUR", rates: { USD: 1.08 } } }
 * ], { middleware: [Pii.middleware()] })
 */
export const layerPackages = (
  packages: ReadonlyArray<PackageSpec>,
  options: LoadOptions & LayerOptions = {}
): Layer.Layer<ToolRegistry.ToolRegistry | Middleware.Middleware, PluginNotFound | InvalidPlugin | InvalidPluginConfig | PluginSetupFailed> =>
  Layer.unwrapEffect(Effect.map(Effect.forEach(packages, (p) => loadPackage(p.package, p.config, options)), (loaded) => layer(loaded, options)))
