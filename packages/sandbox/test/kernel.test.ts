// The sandbox as a plugin in a real kernel: loaded from a policy file with the plugin SDK, every decision in the
// run's log (denials before the call, allowed calls noted, denials found while the call ran), read back by Audit.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Layer, Schema, Stream } from "effect"
import { Chat, EventStore, type Json, Kernel, Middleware, Tenant, ToolRegistry, Workflow } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import { ScriptedModel } from "@artana/core/testing"
import { Plugin, Plugins } from "@artana/plugin-sdk"
import { PluginTest } from "@artana/plugin-sdk/testing"
import { Audit, Policy, Sandbox, Transport } from "@artana/sandbox"
import * as fs from "node:fs"
import * as path from "node:path"
import { tempFolder } from "./fixtures.js"

const dir = tempFolder("kernel")
fs.mkdirSync(path.join(dir, "workspace/out"), { recursive: true })
fs.writeFileSync(path.join(dir, "workspace/input.txt"), "quarterly numbers")
fs.writeFileSync(path.join(dir, "secret.txt"), "secret")
const policyFile = path.join(dir, "policy.yaml")
fs.writeFileSync(policyFile, `default: deny
tools:
  fs.read:  { allow: true, paths: ["workspace/**"] }
  fs.write: { allow: true, paths: ["workspace/out/**"] }
  http.get: { allow: true, domains: ["example.com", "rebind.example.com"] }
  shell.run: { allow: true, executables: [echo, ls], denied_tokens: [--force] }
`)

const tenant = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 1 })
// No network here: names resolve from this table; nothing listens, which a denial never reaches anyway.
const plugin = Sandbox.makePlugin({ transport: Transport.fake({ "rebind.example.com": ["127.0.0.1"] }, { host: "127.0.0.1", port: 9 }) })

describe("the sandbox plugin in a kernel", () => {
  it.effect("allowed calls run and are noted with what they touch; denied ones never run and say why", () =>
    Effect.gen(function*() {
      const loaded = yield* Policy.load(policyFile)
      const config = Sandbox.configOf(loaded)
      const sandbox = yield* Plugin.load(plugin, config)
      expect(sandbox.tools.map((t) => t.name)).toEqual(["fs.read", "fs.write", "http.get", "shell.run"])

      const calls: ReadonlyArray<readonly [string, Json.Json]> = [
        ["fs.read", { path: "workspace/input.txt" }],
        ["fs.write", { path: "workspace/out/summary.txt", content: "done" }],
        ["shell.run", { command: "echo", args: ["hi", "it's a b"] }],
        ["fs.read", { path: "secret.txt" }],
        ["shell.run", { command: "ls", args: ["--force"] }],
        ["http.get", { url: "http://169.254.169.254/latest/meta-data/" }],
        ["http.get", { url: "http://rebind.example.com/" }]
      ]
      const runs = yield* Effect.forEach(calls, ([tool, args], i) =>
        PluginTest.run({ plugin, config, tool, args, tenant, runId: `call-${i}` }))

      expect(runs.map((r) => Either.isRight(r.result))).toEqual([true, true, true, false, false, false, false])
      expect(fs.readFileSync(path.join(dir, "workspace/out/summary.txt"), "utf8")).toBe("done")

      const audits = runs.map((r) => [...Audit.read(r.events).values()][0])
      expect(audits[0]).toMatchObject({ tool: "fs.read", decision: "allowed", filesRead: ["workspace/input.txt"] })
      expect(audits[1]).toMatchObject({ tool: "fs.write", decision: "allowed", filesWritten: ["workspace/out/summary.txt"] })
      expect(audits[2]).toMatchObject({ tool: "shell.run", decision: "allowed", commands: ["echo hi 'it'\\''s a b'"] })
      expect(audits[3]).toMatchObject({ tool: "fs.read", decision: "denied", reason: expect.stringContaining("outside the allowed paths") })
      expect(audits[4]).toMatchObject({ tool: "shell.run", decision: "denied", reason: expect.stringContaining("denied token (--force)") })
      expect(audits[5]).toMatchObject({ tool: "http.get", decision: "denied", reason: expect.stringContaining("cloud metadata") })
      // Allowed before the call (an allowed name), denied while it ran (the name resolved to loopback).
      expect(audits[6]).toMatchObject({ tool: "http.get", decision: "denied", domains: ["rebind.example.com"], reason: expect.stringContaining("resolves to 127.0.0.1") })

      // In the log: a denial before the call is PolicyDenied + ToolFailed(denied), and no handler ran.
      const denied = runs[3]!.events.map((e) => e.payload)
      expect(denied.map((p) => p._tag)).toEqual(["RunStarted", "ToolRequested", "PolicyDenied", "ToolFailed", "RunFailed"])
      expect(denied[3]).toMatchObject({ _tag: "ToolFailed", kind: "denied" })
      const allowed = runs[0]!.events.map((e) => e.payload)
      expect(allowed).toContainEqual(expect.objectContaining({ _tag: "MiddlewareNote", middleware: "sandbox", note: "allowed" }))
      // A denial found as the call ran is a denial in the log too, after the middleware's note.
      const runtime = runs[6]!.events.map((e) => e.payload)
      expect(runtime.map((p) => p._tag)).toEqual(["RunStarted", "ToolRequested", "MiddlewareNote", "PolicyDenied", "ToolFailed", "RunFailed"])
      expect(runtime[4]).toMatchObject({ _tag: "ToolFailed", kind: "denied", error: expect.stringContaining("resolves to 127.0.0.1") })
      expect(Either.isLeft(runs[6]!.result) && runs[6]!.result.left).toMatchObject({ _tag: "PolicyDenied", tool: "http.get" })
    }))

  it.effect("a model's arguments of the wrong shape are the kernel's to refuse, with their path; the policy says nothing", () =>
    // `file` is not a property of fs.read: refused as unknown (before `path` is found missing), never dropped.
    Effect.gen(function*() {
      const sandbox = yield* Sandbox.load(yield* Policy.load(policyFile))
      const events = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        yield* kernel.chat({ runId: "shapeless", tenant, messages: [Chat.user("read the input")] })
        return yield* (yield* EventStore.EventStore).readEvents("acme", "shapeless")
      }).pipe(Effect.provide(Layer.provideMerge(Kernel.layer(), Layer.mergeAll(
        EventStore.layerMemory,
        ScriptedModel.layer([ScriptedModel.toolCall("fs.read", { file: "workspace/input.txt" }), ScriptedModel.text("could not")]),
        Plugins.layer([sandbox])
      ))))
      const failed = events.map((e) => e.payload).filter((p) => p._tag === "ToolFailed" || p._tag === "PolicyDenied")
      expect(failed).toMatchObject([{ _tag: "ToolFailed", tool: "fs.read", kind: "invalid_arguments", path: "$.file" }])
      expect(Audit.records(events)).toEqual([])
    }))

  it.effect("an argument shell.run does not know (env) is refused as invalid, logged, and no command runs", () =>
    Effect.gen(function*() {
      const config = Sandbox.configOf(yield* Policy.load(policyFile))
      const marker = path.join(dir, "env-marker")
      const run = yield* PluginTest.run({
        plugin,
        config,
        tool: "shell.run",
        args: { command: "ls", args: [marker], env: { LS_COLORS: "x" } },
        tenant,
        runId: "env-arg"
      })
      const error = Either.isLeft(run.result) ? run.result.left : undefined
      expect([error?._tag, error?._tag === "InvalidToolArguments" ? error.path : error?.message]).toEqual(["InvalidToolArguments", "$.env"])
      const payloads = run.events.map((e) => e.payload)
      expect(payloads.filter((p) => p._tag === "ToolFailed")).toMatchObject([{ kind: "invalid_arguments", path: "$.env" }])
      expect(payloads.some((p) => p._tag === "ToolCompleted")).toBe(false)
      expect(Audit.records(run.events)).toEqual([])
    }))

  it.effect("a tool the policy does not allow is denied by default", () =>
    Effect.gen(function*() {
      const config = { baseDir: dir, policy: { default: "deny", tools: { "fs.read": { allow: true, paths: ["workspace/**"] } } } }
      const run = yield* PluginTest.run({ plugin, config, tool: "shell.run", args: { command: "echo", args: ["x"] }, tenant })
      expect(Either.isLeft(run.result) && run.result.left.message).toContain("shell.run has no rule in the policy (default: deny)")
    }))

  it.effect("the decisions read back the same from the store after the run", () =>
    Effect.gen(function*() {
      const sandbox = yield* Plugin.load(plugin, Sandbox.configOf(yield* Policy.load(policyFile)))
      const events = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        yield* kernel.callTool({ runId: "stored", tenant, tool: "fs.read", args: { path: "workspace/input.txt" } })
        return yield* (yield* EventStore.EventStore).readEvents("acme", "stored")
      }).pipe(Effect.provide(PluginTest.layer([sandbox])))
      expect([...Audit.read(events).entries()]).toEqual([
        ["tool:0", { stepKey: "tool:0", tool: "fs.read", decision: "allowed", reason: "workspace/input.txt is within fs.read's paths", filesRead: ["workspace/input.txt"], filesWritten: [], domains: [], commands: [] }]
      ])
    }))

  it.effect("Sandbox.layer gives a host the tools and the middleware for a policy file, after its own", () =>
    Effect.gen(function*() {
      const loaded = yield* Policy.load(policyFile)
      const sandbox = yield* Sandbox.load(loaded)
      expect(sandbox.tools.map((t) => t.name)).toEqual(["fs.read", "fs.write", "http.get", "shell.run"])
      expect(sandbox.middleware.map((m) => m.name)).toEqual(["sandbox"])
      const events = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const registry = yield* ToolRegistry.ToolRegistry
        expect(registry.list().map((t) => t.name)).toEqual(["fs.read", "fs.write", "http.get", "shell.run"])
        const middleware = yield* Middleware.Middleware
        expect(middleware.interceptors.map((m) => m.name)).toEqual(["host", "sandbox"])
        yield* Effect.flip(kernel.callTool({ runId: "layered", tenant, tool: "fs.read", args: { path: "secret.txt" } }))
        return yield* (yield* EventStore.EventStore).readEvents("acme", "layered")
      }).pipe(Effect.provide(Layer.provideMerge(
        Kernel.layer(),
        Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([]), Sandbox.layer(loaded, { middleware: [{ name: "host" }] }))
      )))
      expect(Audit.records(events)).toMatchObject([{ stepKey: "tool:0", tool: "fs.read", decision: "denied", reason: expect.stringContaining("outside the allowed paths") }])
    }))
})

describe("Audit.stream", () => {
  it.effect("reads the records of a long run's calls from its verified log a page at a time, each once its call ended: the records Audit.records reads from the whole log", () =>
    Effect.gen(function*() {
      const loaded = yield* Policy.load(policyFile)
      // Allowed reads, denied reads, allowed writes, one after the other.
      const calls = Array.from({ length: 45 }, (_, i): readonly [string, Json.Json] =>
        i % 3 === 0
          ? ["fs.read", { path: "workspace/input.txt" }]
          : i % 3 === 1
          ? ["fs.read", { path: "secret.txt" }]
          : ["fs.write", { path: `workspace/out/${i}.txt`, content: `${i}` }])
      const many = Workflow.make({
        name: "many-calls",
        input: Schema.Null,
        output: Schema.Number,
        run: (_input, ctx) =>
          Effect.gen(function*() {
            for (const [tool, args] of calls) yield* Effect.either(ctx.tool(tool, args))
            return calls.length
          })
      })
      const filename = path.join(tempFolder("audit-stream"), "artana.db")
      const layer = Layer.provideMerge(Kernel.layer(), Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer([]), Sandbox.layer(loaded)))
      const { streamed, whole } = yield* Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        yield* kernel.execute(many, { runId: "many", tenant, input: null })
        const run = { tenantId: "acme", runId: "many" }
        const streamed = yield* Stream.runCollect(Audit.stream(kernel.events(run, { pageSize: 7 })))
        return { streamed: Chunk.toReadonlyArray(streamed), whole: Audit.records(yield* kernel.readEvents(run)) }
      }).pipe(Effect.provide(layer))
      expect(streamed).toHaveLength(calls.length)
      expect(streamed).toEqual(whole)
      expect(streamed.map((r) => `${r.tool}:${r.decision}`).slice(0, 3)).toEqual(["fs.read:allowed", "fs.read:denied", "fs.write:allowed"])
      expect(streamed[2]).toMatchObject({ filesWritten: ["workspace/out/2.txt"] })
    }))
})
