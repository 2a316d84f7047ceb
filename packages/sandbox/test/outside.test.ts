// Found from the outside (issue 20): a trailing slash on a file fails as the system fails (ENOTDIR); a read over the
// cap is a denial naming the cap, in the audit's denials as a write over the cap is; cloud metadata and host endpoints
// (Azure's WireServer among them) are refused by name and address unless the policy opts in. Each through a real
// kernel's log, read back by Audit.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { type Json, Tenant } from "@artana/core"
import { PluginTest } from "@artana/plugin-sdk/testing"
import { Audit, type Policy, Sandbox, Transport } from "@artana/sandbox"
import * as fs from "node:fs"
import * as path from "node:path"
import { tempFolder } from "./fixtures.js"

const dir = tempFolder("outside")
fs.mkdirSync(path.join(dir, "workspace/out"), { recursive: true })
fs.writeFileSync(path.join(dir, "workspace/notes.txt"), "Q3 revenue\n")
fs.writeFileSync(path.join(dir, "workspace/big.txt"), "x".repeat(2048))

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })

const METADATA_HOSTS = [
  "metadata.google.internal", "metadata.goog", "metadata.azure.com", "instance-data.ec2.internal",
  "metadata.tencentyun.com", "api.metadata.cloud.ibm.com", "metadata.oraclecloud.com"
]
const METADATA_ADDRESSES = [
  "168.63.129.16", "169.254.169.254", "169.254.170.2", "169.254.170.23", "169.254.169.123", "100.100.100.200",
  "169.254.0.23", "192.0.0.192", "[fd00:ec2::254]", "[fd20:ce::254]", "[::ffff:168.63.129.16]"
]

const config = (allowMetadata: boolean) => Sandbox.configOf({
  baseDir: dir,
  document: {
    default: "deny",
    tools: {
      "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1024 },
      "fs.write": { allow: true, paths: ["workspace/out/**"], deny_hidden: true, max_bytes: 1024 },
      "http.get": {
        allow: true,
        domains: [...METADATA_HOSTS, ...METADATA_ADDRESSES.map((a) => a.replace(/^\[|\]$/g, "")), "wire.example.com"],
        block_private: false,
        max_bytes: 1024,
        timeout_ms: 2000,
        max_redirects: 0,
        allow_metadata: allowMetadata
      }
    }
  }
} satisfies Policy.Policy)

// No network: every name resolves to Azure's WireServer; connections go to a port where nothing listens.
const plugin = Sandbox.makePlugin({ transport: Transport.fake({ "wire.example.com": ["168.63.129.16"] }, { host: "127.0.0.1", port: 9 }) })

const call = (tool: string, args: Json.Json, allowMetadata = false) =>
  Effect.map(PluginTest.run({ plugin, config: config(allowMetadata), tool, args, tenant, runId: `r-${tool}-${JSON.stringify(args)}` }), (r) => ({
    result: r.result,
    audit: [...Audit.read(r.events).values()][0]!
  }))

describe("found from the outside", () => {
  it.effect("fs.read of notes.txt/ fails as the system does (ENOTDIR); notes.txt reads", () =>
    Effect.gen(function*() {
      expect(() => fs.readFileSync(path.join(dir, "workspace/notes.txt/"))).toThrow(/ENOTDIR/)
      for (const p of ["workspace/notes.txt/", "workspace/notes.txt/."]) {
        const slashed = yield* call("fs.read", { path: p })
        expect(Either.isLeft(slashed.result)).toBe(true)
        expect(slashed.audit).toMatchObject({ decision: "denied", reason: expect.stringContaining("ENOTDIR") })
      }
      const plain = yield* call("fs.read", { path: "workspace/notes.txt" })
      expect(plain.result).toMatchObject(Either.right({ content: "Q3 revenue\n" }))
    }))

  it.effect("a read over max_bytes is a denial naming the cap, in the audit's denials, as a write over it is", () =>
    Effect.gen(function*() {
      const read = yield* call("fs.read", { path: "workspace/big.txt" })
      expect(read.result).toMatchObject(Either.left({ _tag: "PolicyDenied" }))
      expect(read.audit).toMatchObject({ tool: "fs.read", decision: "denied", reason: "workspace/big.txt is 2048 bytes, over fs.read's max_bytes (1024)" })
      const write = yield* call("fs.write", { path: "workspace/out/big.txt", content: "x".repeat(2048) })
      expect(write.result).toMatchObject(Either.left({ _tag: "PolicyDenied" }))
      expect(write.audit).toMatchObject({ tool: "fs.write", decision: "denied", reason: expect.stringContaining("max_bytes (1024)") })
    }))

  it("a file that grows over the cap after the check is denied as it is read (the tool's own check)", async () => {
    fs.writeFileSync(path.join(dir, "workspace/grows.txt"), "small")
    const policy: Policy.Policy = { baseDir: dir, document: { default: "deny", tools: { "fs.read": { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1024 } } } }
    expect(Sandbox.decide(policy, "fs.read", { path: "workspace/grows.txt" }).ok).toBe(true)
    fs.writeFileSync(path.join(dir, "workspace/grows.txt"), "y".repeat(4096))
    const tool = Sandbox.tools(policy).find((t) => t.name === "fs.read")!
    const { context } = await import("./fixtures.js")
    const outcome = await Effect.runPromise(Effect.either(tool.invoke({ path: "workspace/grows.txt" }, context)))
    expect(outcome).toMatchObject(Either.left({ _tag: "PolicyDenied", reason: "workspace/grows.txt is 4096 bytes, over fs.read's max_bytes (1024)" }))
  })

  it.effect("cloud metadata and host endpoints are refused by name and address although listed, unless allow_metadata", () =>
    Effect.gen(function*() {
      for (const host of [...METADATA_HOSTS, ...METADATA_ADDRESSES]) {
        const refused = yield* call("http.get", { url: `http://${host}/` })
        expect(refused.audit, host).toMatchObject({ decision: "denied", reason: expect.stringContaining("cloud metadata") })
      }
      // A listed name that resolves to the WireServer is refused as the call runs.
      const resolved = yield* call("http.get", { url: "http://wire.example.com/" })
      expect(resolved.audit).toMatchObject({ decision: "denied", reason: expect.stringContaining("168.63.129.16 is a cloud metadata address") })
      // Opted in: the policy's checks pass (the call then fails to connect: nothing listens here).
      for (const host of ["168.63.129.16", "metadata.google.internal", "wire.example.com"]) {
        const allowed = yield* call("http.get", { url: `http://${host}/` }, true)
        expect(allowed.audit.reason, host).not.toContain("cloud metadata")
      }
    }))
})
