/**
 * `artana mcp pin`: fingerprints the tools the policy's MCP servers offer now and writes them into the policy's
 * `mcp:` section (comments and layout kept), so that a tool that changes afterwards is withheld until pinned again.
 */
import { McpConfig, McpErrors, McpPins, McpServers } from "@artana/mcp"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fs from "node:fs"
import * as YAML from "yaml"
import * as ExitCode from "../ExitCode.js"
import * as Out from "./output.js"

export interface PinArgs {
  readonly policy: string
  readonly server: string | undefined
  readonly format: Out.Format
  readonly verbose: boolean
}

/** What pinning changed on one server, compared with the pins the policy held. */
export interface Pinned {
  readonly server: string
  readonly tools: number
  readonly added: ReadonlyArray<string>
  readonly changed: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
}

const read = (file: string) =>
  Effect.try({
    try: () => fs.readFileSync(file, "utf8"),
    catch: (e) => new McpErrors.InvalidMcpConfig({ file, path: "$", reason: `cannot read the policy: ${e instanceof Error ? e.message : String(e)}` })
  })

/** `artana mcp pin --policy POLICY [--server NAME]`. */
export const pin = (args: PinArgs) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    const text = yield* read(args.policy)
    const config = yield* Either.match(McpConfig.fromPolicy(text, args.policy), { onLeft: Effect.fail, onRight: Effect.succeed })
    if (config === undefined || config.servers.length === 0) {
      return yield* new McpErrors.InvalidMcpConfig({ file: args.policy, path: "$.mcp", reason: "the policy has no MCP servers (an `mcp:` section with `servers:`)" })
    }
    const names = args.server === undefined ? config.servers.map((s) => s.name) : [args.server]
    const servers = yield* McpServers.make(config)
    const pins = yield* McpPins.current(servers, names)

    const document = YAML.parseDocument(text)
    const results: Array<Pinned> = []
    config.servers.forEach((server, index) => {
      const now = pins[server.name]
      if (now === undefined) return
      const before = server.pins ?? {}
      results.push({
        server: server.name,
        tools: Object.keys(now).length,
        added: Object.keys(now).filter((t) => before[t] === undefined),
        changed: Object.keys(now).filter((t) => before[t] !== undefined && before[t] !== now[t]),
        removed: Object.keys(before).filter((t) => now[t] === undefined)
      })
      document.setIn(["mcp", "servers", index, "pins"], document.createNode({ ...now }))
    })
    yield* Effect.sync(() => fs.writeFileSync(args.policy, document.toString()))

    if (args.format === "json") {
      yield* Out.json({ policy: args.policy, servers: results })
    } else {
      for (const r of results) {
        const detail = [
          r.added.length > 0 ? `new: ${r.added.join(", ")}` : "",
          r.changed.length > 0 ? `changed: ${r.changed.join(", ")}` : "",
          r.removed.length > 0 ? `gone: ${r.removed.join(", ")}` : ""
        ].filter((d) => d !== "").join("; ")
        yield* Out.stdout(`pinned ${r.tools} tool${r.tools === 1 ? "" : "s"} of ${r.server}${detail === "" ? " (unchanged)" : ` (${detail})`} in ${args.policy}`)
      }
    }
    return ExitCode.Ok
  })))
