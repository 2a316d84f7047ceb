// The README's "Use" program, as written (a temp folder in place of the working directory), on a SQLite file.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { EventStore, Kernel, Tenant } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Audit, Policy, Sandbox } from "@artana/sandbox"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as path from "node:path"
import { tempFolder } from "./fixtures.js"

const dir = tempFolder("readme")
fs.mkdirSync(path.join(dir, "workspace/out"), { recursive: true })
fs.writeFileSync(path.join(dir, "workspace/input.txt"), "quarterly numbers")
fs.writeFileSync(path.join(dir, "policy.yaml"), `# policy.yaml: paths are relative to this file's folder, which is also shell.run's working directory
default: deny
tools:
  fs.read:  { allow: true, paths: ["workspace/**"], deny_hidden: true, max_bytes: 1048576 }
  fs.write: { allow: true, paths: ["workspace/out/**"] }
  http.get: { allow: true, domains: ["example.com", "*.example.org"], block_private: true, max_bytes: 1048576, timeout_ms: 10000 }
  shell.run: { allow: true, executables: [ls, cat, echo, git], denied_tokens: [rm, --force, sudo], timeout_ms: 10000, max_output_bytes: 65536 }
`)

// No model is called here; an agent would use @artana/model-openai's layer.
const model = ScriptedModel.layer([])

const program = Effect.gen(function*() {
  const loaded = yield* Policy.load(path.join(dir, "policy.yaml")) // PolicyError: file, line, column, field, reason
  const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
  const run = Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    yield* kernel.callTool({ runId: "r1", tenant, tool: "fs.read", args: { path: "workspace/input.txt" } })
    const events = yield* (yield* EventStore.EventStore).readEvents("acme", "r1")
    return Audit.records(events) // [{ stepKey, tool, decision, reason, filesRead, filesWritten, domains, commands }]
  })
  return yield* run.pipe(Effect.provide(Layer.provideMerge(
    Kernel.layer(),
    Layer.mergeAll(SqliteStore.layer({ filename: path.join(dir, "artana.db") }), model, Sandbox.layer(loaded))
  )))
})

describe("the README", () => {
  it.effect("its program runs as written: the call allowed, its audit record read back from the SQLite log", () =>
    Effect.gen(function*() {
      expect(yield* program).toEqual([{
        stepKey: "tool:0",
        tool: "fs.read",
        decision: "allowed",
        reason: "workspace/input.txt is within fs.read's paths",
        filesRead: ["workspace/input.txt"],
        filesWritten: [],
        domains: [],
        commands: []
      }])
      expect(fs.existsSync(path.join(dir, "artana.db"))).toBe(true)
    }))
})
