// The config, in code and in a policy's YAML: located errors, defaults, the capabilities a host grants.
import { describe, expect, it } from "vitest"
import { Either } from "effect"
import { McpConfig, McpServers } from "@artana/mcp"

describe("McpConfig", () => {
  it("reads a policy's mcp: section next to the sandbox's rules, and locates a problem by line, column and field", () => {
    const ok = McpConfig.fromPolicy(`default: deny
tools: { fs.read: { allow: true } }
mcp:
  servers:
    - { name: files, command: node, args: [files.js], tools: { write: { capability: files:write } } }
    - { name: gh, url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer \${GH_TOKEN}" } }
`, "policy.yaml")
    const config = Either.getOrThrow(ok)!
    expect(config.servers.map((s) => s.name)).toEqual(["files", "gh"])
    expect(McpConfig.capabilities(config)).toEqual(["files:write", "mcp:files", "mcp:gh"])
    expect(McpConfig.capabilityOf(config.servers[0]!, "read")).toBe("mcp:files")
    expect(McpConfig.timeoutOf(config.servers[1]!, "x")).toBe(60_000)

    expect(Either.getOrThrow(McpConfig.fromPolicy("default: deny\n", "policy.yaml"))).toBeUndefined()

    const bad = McpConfig.fromPolicy("mcp:\n  servers:\n    - name: files\n      comand: node\n", "policy.yaml")
    expect(Either.isLeft(bad) && bad.left).toMatchObject({ _tag: "InvalidMcpConfig", file: "policy.yaml", line: 4 })
    expect(Either.isLeft(bad) && bad.left.message).toMatch(/^policy\.yaml:4:\d+: invalid MCP config at \$\.mcp\.servers\[0\]/)
  })

  it("refuses two servers of one name, a server name that cannot prefix a tool, and an unknown field", () => {
    const twice = McpServers.decodeConfig({ servers: [{ name: "a", command: "x" }, { name: "a", url: "http://127.0.0.1/mcp" }] })
    expect(Either.isLeft(twice) && twice.left.reason).toContain('two servers are named "a"')
    const name = McpServers.decodeConfig({ servers: [{ name: "a.b", command: "x" }] })
    expect(Either.isLeft(name) && name.left.path).toBe("$.servers[0].name")
    const unknown = McpServers.decodeConfig({ servers: [{ name: "a", command: "x", capabilty: "typo" }] })
    expect(Either.isLeft(unknown)).toBe(true)
  })

  it("refuses a literal env or header value (it would be logged with the run) and says how to read it from the environment", () => {
    const header = McpConfig.fromPolicy(`mcp:
  servers:
    - { name: gh, url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer ghp_literal" } }
`, "policy.yaml")
    expect(Either.isLeft(header) && header.left).toMatchObject({ _tag: "InvalidMcpConfig", file: "policy.yaml", line: 3 })
    expect(Either.isLeft(header) && header.left.message).toContain('would be logged with the run; read it from the environment: write "${NAME}"')
    expect(Either.isLeft(header) && header.left.message).not.toContain("ghp_literal")
    const env = McpServers.decodeConfig({ servers: [{ name: "files", command: "node", env: { API_KEY: "sk-literal" } }] })
    expect(Either.isLeft(env) && env.left).toMatchObject({ path: "$.servers[0].env.API_KEY", reason: expect.stringContaining("literal environment value") })

    // Templates, whole or inside a value, are what the config takes.
    const ok = McpServers.decodeConfig({
      servers: [
        { name: "files", command: "node", env: { API_KEY: "${FILES_KEY}", URL: "https://${HOST}/v1" } },
        { name: "gh", url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer ${GH_TOKEN}" } }
      ]
    })
    expect(Either.isRight(ok)).toBe(true)
  })
})
