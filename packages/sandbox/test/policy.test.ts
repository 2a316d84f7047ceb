// The policy file: defaults, and bad input located by file, line, column and field.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { Policy } from "@artana/sandbox"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "artana-policy-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const parse = (text: string) => Policy.parse(text, { file: "policy.yaml", baseDir: dir })

describe("Policy", () => {
  it("fills safe defaults for what a rule leaves out", () => {
    const parsed = parse("default: deny\ntools:\n  fs.read: { allow: true, paths: [\"workspace/**\"] }\n  http.get: { allow: true, domains: [example.com] }\n  shell.run: { allow: true, executables: [ls] }\n")
    expect(Either.isRight(parsed)).toBe(true)
    if (Either.isRight(parsed)) {
      expect(parsed.right.document.tools["fs.read"]).toEqual({ allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1_048_576 })
      expect(parsed.right.document.tools["http.get"]).toEqual({ allow: true, domains: ["example.com"], block_private: true, max_bytes: 1_048_576, timeout_ms: 10_000, max_redirects: 5, allow_metadata: false })
      expect(parsed.right.document.tools["shell.run"]).toEqual({ allow: true, executables: ["ls"], denied_tokens: [], timeout_ms: 10_000, max_output_bytes: 65_536, containment: "bubblewrap", max_memory_bytes: 4_294_967_296, max_processes: 128, max_file_bytes: 67_108_864 })
      expect(parsed.right.document.tools["fs.write"]).toBeUndefined()
      expect(parsed.right.baseDir).toBe(dir)
    }
    // A section that does not say allow: true allows nothing.
    const bare = parse("tools:\n  fs.read: { paths: [\"**\"] }\n")
    expect(Either.isRight(bare) && Policy.ruleOf(bare.right, "fs.read")).toEqual(Either.left("fs.read is not allowed by the policy (allow: false)"))
  })

  it.each([
    ["malformed YAML", "default: deny\ntools:\n  fs.read: { allow: true, paths: [unclosed }\n", "policy.yaml:3:", "$"],
    ["a field of the wrong type", "tools:\n  fs.read:\n    allow: yes please\n", "policy.yaml:3:12: tools.fs.read.allow", "$.tools.fs.read.allow"],
    ["an unknown tool", "tools:\n  fs.delete: { allow: true }\n", "policy.yaml:2:3", "$.tools.fs.delete"],
    ["a misspelt field", "tools:\n  http.get: { allow: true, domain: [example.com] }\n", "unknown field \"domain\"", "$.tools.http.get.domain"],
    ["a default other than deny", "default: allow\n", "policy.yaml:1:10", "$.default"],
    ["a negative cap", "tools:\n  fs.read: { allow: true, max_bytes: -5 }\n", "max_bytes", "$.tools.fs.read.max_bytes"],
    ["a list where a mapping belongs", "- fs.read\n", "a policy is a mapping", "$"],
    ["duplicate keys", "tools:\n  fs.read: { allow: true }\n  fs.read: { allow: false }\n", "policy.yaml:3:", "$"],
    ["a URL where a domain belongs", "tools:\n  http.get: { allow: true, domains: [\"https://example.com\"] }\n", "policy.yaml:2:38: tools.http.get.domains[0]: \"https://example.com\" is not a host name", "$.tools.http.get.domains[0]"],
    ["a wildcard without its dot", "tools:\n  http.get:\n    allow: true\n    domains:\n      - example.com\n      - \"*example.org\"\n", "policy.yaml:6:9", "$.tools.http.get.domains[1]"],
    ["a relative executable path", "tools:\n  shell.run: { allow: true, executables: [./build.sh] }\n", "\"./build.sh\" is not an executable name or an absolute path", "$.tools.shell.run.executables[0]"],
    ["a command line where an executable belongs", "tools:\n  shell.run: { allow: true, executables: [\"ls -la\"] }\n", "not an executable name", "$.tools.shell.run.executables[0]"],
    ["a string where a list belongs", "tools:\n  fs.read: { allow: true, paths: workspace/** }\n", "policy.yaml:2:34: tools.fs.read.paths", "$.tools.fs.read.paths"],
    ["a timeout that is not an integer", "tools:\n  http.get: { allow: true, timeout_ms: 1.5 }\n", "timeout_ms", "$.tools.http.get.timeout_ms"]
  ])("refuses %s, naming where", (_what, text, inMessage, field) => {
    const parsed = parse(text)
    expect(Either.isLeft(parsed)).toBe(true)
    if (Either.isLeft(parsed)) {
      expect(parsed.left.message).toContain(inMessage)
      expect(parsed.left.field).toBe(field)
    }
  })

  it.effect("load reads the file, takes its folder as the base directory, and hashes its bytes", () =>
    Effect.gen(function*() {
      const file = path.join(dir, "policy.yaml")
      fs.writeFileSync(file, "default: deny\ntools:\n  fs.read: { allow: true, paths: [\"workspace/**\"] }\n")
      const loaded = yield* Policy.load(file)
      expect(loaded.policy.baseDir).toBe(dir)
      expect(loaded.sha256).toMatch(/^[0-9a-f]{64}$/)
      expect(loaded.source).toEqual({ default: "deny", tools: { "fs.read": { allow: true, paths: ["workspace/**"] } } })
      const missing = yield* Effect.flip(Policy.load(path.join(dir, "nope.yaml")))
      expect(missing.message).toContain("cannot read the policy file")
    }))

  it.effect("a loaded policy's record rebuilds the same policy (a replay's tools); a record that does not decode is located", () =>
    Effect.gen(function*() {
      const file = path.join(dir, "recorded.yaml")
      fs.writeFileSync(file, "tools:\n  http.get: { allow: true, domains: [example.com], timeout_ms: 500 }\n")
      const loaded = yield* Policy.load(file)
      const record = Policy.toRecord(loaded)
      expect(record).toEqual({ file, sha256: loaded.sha256, document: { tools: { "http.get": { allow: true, domains: ["example.com"], timeout_ms: 500 } } } })
      // Through JSON, as a log stores it.
      const rebuilt = Policy.fromRecord(JSON.parse(JSON.stringify(record)))
      expect(rebuilt).toEqual(Either.right(loaded.policy))
      expect(Policy.fromRecord(record, { baseDir: "/elsewhere" })).toEqual(Either.right({ ...loaded.policy, baseDir: "/elsewhere" }))
      const bad = Policy.fromRecord({ ...record, document: { tools: { "http.get": { allow: "yes" } } } })
      expect(Either.isLeft(bad) && bad.left).toMatchObject({ _tag: "PolicyError", file, field: "$.tools.http.get.allow" })
    }))
})
