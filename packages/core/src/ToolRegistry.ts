/**
 * The `ToolRegistry`: the tools a kernel can call, by name.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type { Tool } from "./Tool.js"

export interface Service {
  readonly get: (name: string) => Tool | undefined
  readonly list: () => ReadonlyArray<Tool>
}

/** The tools a kernel can call. */
export class ToolRegistry extends Context.Tag("@artana/core/ToolRegistry")<ToolRegistry, Service>() {}

/** Builds a registry; two tools with one name are a programming error and throw at once. */
export const make = (tools: ReadonlyArray<Tool>): Service => {
  const byName = new Map<string, Tool>()
  for (const tool of tools) {
    if (byName.has(tool.name)) throw new Error(`two tools are named "${tool.name}"; tool names must be unique`)
    byName.set(tool.name, tool)
  }
  const list = [...byName.values()]
  return { get: (name) => byName.get(name), list: () => list }
}

/**
 * A registry layer.
 *
 * @example
 * const tools = ToolRegistry.layer([getBalance, transfer])
 */
export const layer = (tools: ReadonlyArray<Tool>): Layer.Layer<ToolRegistry> =>
  Layer.sync(ToolRegistry, () => make(tools))
