/**
 * Pinning: the fingerprints of the tools a server offers now, for a person who reviewed them to write into the
 * config (`artana mcp pin` writes them into the policy's `mcp:` section). Until then a tool that changed, or that
 * was added, is withheld from the model (see `McpTools.decide`).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type { McpServerError } from "./McpErrors.js"
import { connectionOf, type Service } from "./McpServers.js"
import { fingerprint, listed } from "./McpTools.js"

/** Fingerprints by tool name, per server. */
export type Pins = Readonly<Record<string, Readonly<Record<string, string>>>>

/**
 * Lists the servers (default all configured) now and fingerprints every tool they offer.
 *
 * @example
 * const pins = yield* McpPins.current(servers)   // { files: { read_file: "2c26…", write_file: "9f86…" } }
 */
export const current = (service: Service, servers?: ReadonlyArray<string>): Effect.Effect<Pins, McpServerError> =>
  Effect.map(
    Effect.forEach(servers ?? service.config.servers.map((s) => s.name), (name) =>
      Effect.gen(function*() {
        const tools = yield* (yield* connectionOf(service, name)).list
        const pins = Object.fromEntries(tools.map((t) => [t.name, fingerprint(listed(t))] as const).sort(([a], [b]) => a.localeCompare(b)))
        return [name, pins] as const
      })),
    (entries) => Object.fromEntries(entries)
  )
