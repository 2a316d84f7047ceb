/**
 * What can go wrong when a plugin is loaded: each a `Schema.TaggedError` with a message a person can act on.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** No package of that name can be found from where it was looked up, or it cannot be imported. */
export class PluginNotFound extends Schema.TaggedError<PluginNotFound>()("PluginNotFound", {
  package: Schema.String,
  from: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `plugin package "${this.package}" cannot be loaded from ${this.from}: ${this.reason} (install it: pnpm add ${this.package})`
  }
}

/** The package loads, but its default export is not a plugin, or the plugin is inconsistent. */
export class InvalidPlugin extends Schema.TaggedError<InvalidPlugin>()("InvalidPlugin", {
  plugin: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid plugin ${this.plugin}: ${this.reason}`
  }
}

/** The config given to a plugin does not match its config schema. */
export class InvalidPluginConfig extends Schema.TaggedError<InvalidPluginConfig>()("InvalidPluginConfig", {
  plugin: Schema.String,
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid config for plugin ${this.plugin} at ${this.path}: ${this.reason}`
  }
}

/** A plugin's tools could not be made from its config (its factory failed). */
export class PluginSetupFailed extends Schema.TaggedError<PluginSetupFailed>()("PluginSetupFailed", {
  plugin: Schema.String,
  reason: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message() {
    return `plugin ${this.plugin} could not set up its tools: ${this.reason}`
  }
}

export type PluginError = PluginNotFound | InvalidPlugin | InvalidPluginConfig | PluginSetupFailed

const TAGS = new Set(["PluginNotFound", "InvalidPlugin", "InvalidPluginConfig", "PluginSetupFailed"])

/** Whether `u` is one of these errors. */
export const isPluginError = (u: unknown): u is PluginError => Predicate.hasProperty(u, "_tag") && typeof u._tag === "string" && TAGS.has(u._tag)
