// An agent is an ordinary workflow value: registered by name like any workflow, resumed by name in a new runtime.
import { describe, expect, it } from "vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Schema } from "effect"
import { Artana, EventStore, Tool, type Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AgentClient, AutonomousAgent, SqlMemoryStore } from "@artana/agent"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant } from "./fixtures.js"

describe("an agent as a workflow value", () => {
  it("registered by name (no assembly of its own), a run stopped mid-tool resumes by name in a new runtime over the same file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "artana-agent-workflow-"))
    const filename = join(dir, "artana.db")
    const calls: Array<string> = []
    let stop = true
    const lookup = Tool.make({
      name: "lookup",
      description: "Looks a customer up",
      parameters: Schema.Struct({ name: Schema.String }),
      idempotent: true,
      handler: ({ name }, ctx) =>
        Effect.suspend(() => {
          calls.push(ctx.idempotencyKey)
          // The process stops in the handler: no outcome is written, the run stays running.
          return stop ? Effect.interrupt : Effect.succeed({ name, tier: "gold" })
        })
    })
    const support = AutonomousAgent.make({ name: "support", instructions: "You help customers.", tools: [lookup] })
    // A worker's list, the session's submit and the kernel's registry take it as they take any workflow.
    const listed: ReadonlyArray<Workflow.Any> = [support.workflow]
    expect(listed.map((w) => w.name)).toEqual(["agent:support"])
    const input = { prompt: "Which tier is Ann?", model: "scripted" }
    try {
      const first = AgentClient.create({
        store: SqliteStore.layer({ filename }),
        memory: SqlMemoryStore.layer(),
        model: ScriptedModel.layer([ScriptedModel.toolCall("lookup", { name: "Ann" })]),
        workflows: [support.workflow]
      })
      await expect(first.run(support, { runId: "s-1", tenant, prompt: input.prompt, model: input.model })).rejects.toBeDefined()
      await first.close()
      stop = false

      // A new runtime knows the agent only as a registered workflow; the model's first step comes from the log.
      const store = SqliteStore.layer({ filename })
      const second = Artana.create({
        store,
        model: ScriptedModel.layer([ScriptedModel.text("Ann is gold")]),
        workflows: [support.workflow],
        services: [SqlMemoryStore.layer().pipe(Layer.provide(store))]
      })
      try {
        const resumed = await second.resume({ tenantId: tenant.tenantId, runId: "s-1" })
        expect(resumed).toMatchObject({ status: "completed", output: { output: "Ann is gold", turns: 2 } })
        // The idempotent call in doubt ran again once, with the same key; nothing else ran twice.
        expect(calls).toEqual(["s-1/turn:0/tool:0", "s-1/turn:0/tool:0"])
        expect(await second.status({ tenantId: tenant.tenantId, runId: "s-1" })).toMatchObject({ status: "completed" })
        expect(await second.replay(support.workflow, { tenantId: tenant.tenantId, runId: "s-1" })).toEqual(resumed)
      } finally {
        await second.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("run where its services are missing, it fails with ServiceMissing naming the one to give", async () => {
    const support = AutonomousAgent.make({ name: "support", instructions: "You help customers." })
    const artana = Artana.create({ model: ScriptedModel.layer([ScriptedModel.text("hi")]), workflows: [support.workflow] })
    try {
      const error = await artana.run(support.workflow, { tenant, input: { prompt: "Hi", model: "scripted" } }).catch((e: unknown) => e)
      expect(error).toMatchObject({ _tag: "ServiceMissing", agent: "support", service: "a MemoryStore" })
      expect(String(error)).toContain("services: [MemoryStore.layerMemory]")
    } finally {
      await artana.close()
    }
  })

  it("AgentClient checks a tenant given as plain data at the boundary: InvalidTenant, and no run", async () => {
    const support = AutonomousAgent.make({ name: "support", instructions: "You help customers." })
    const client = AgentClient.create({ store: EventStore.layerMemory, model: ScriptedModel.layer([]) })
    try {
      const error = await client.run(support, { runId: "t-1", tenant: { tenantId: "acme", budgetUsdLimit: Infinity }, prompt: "Hi" }).catch((e: unknown) => e)
      expect(error).toMatchObject({ _tag: "InvalidTenant" })
      expect(String(error)).toContain("budgetUsdLimit")
    } finally {
      await client.close()
    }
  })
})
