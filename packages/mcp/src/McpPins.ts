/**
 * Pinning: the fingerprints of the tools a server offers now, for a person who reviewed them to write into the
 * config (`artana mcp pin` writes them into the policy's `mcp:` section). Until then a tool that changed, or that
 * was added, is withheld from the model (see `McpTools.decide`).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type { McpServerError } from "./McpErrors.js"
import type { Service } from "./McpServers.js"
import { list } from "./McpTools.js"

/** Fingerprints by tool name, per server. */
export type Pins = Readonly<Record<string, Readonly<Record<string, string>>>>

/**
 * Lists the servers (default all configured) now and fingerprints every tool they offer, withheld ones included.
 *
 * @example
 * const pins = yield* McpPins.current(servers)   // { files: { read_file: "2c26…", write_file: "9f86…" } }
 */
export const current = (service: Service, servers?: ReadonlyArray<string>): Effect.Effect<Pins, McpServerError> =>
  Effect.map(list(service, servers), ({ entries }) => {
    const pins: Record<string, Record<string, string>> = {}
    for (const name of servers ?? service.config.servers.map((s) => s.name)) pins[name] = {}
    for (const entry of [...entries].sort((a, b) => a.tool.name.localeCompare(b.tool.name))) pins[entry.server]![entry.tool.name] = entry.fingerprint
    return pins
  })
