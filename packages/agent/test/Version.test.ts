// An agent has a version (issue 19): its workflow's, recorded by each run it starts, so workers route its runs.
import { describe, expect, it } from "vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import { EventStore } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { AgentClient, AutonomousAgent, SqlMemoryStore } from "@artana/agent"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant } from "./fixtures.js"

describe("an agent's version", () => {
  it("is its workflow's (default \"1\"), and a run of it records the version that started it", async () => {
    const plain = AutonomousAgent.make({ name: "plain", instructions: "You help." })
    expect(plain.workflow.version).toBe("1")
    const support = AutonomousAgent.make({ name: "support", instructions: "You help customers.", version: "2026-11-26" })
    expect(support.workflow.version).toBe("2026-11-26")
    expect(support.workflowFor(Schema.Struct({ answer: Schema.String })).version).toBe("2026-11-26")
    const dir = mkdtempSync(join(tmpdir(), "artana-agent-version-"))
    const filename = join(dir, "artana.db")
    try {
      const client = AgentClient.create({
        store: SqliteStore.layer({ filename }),
        memory: SqlMemoryStore.layer(),
        model: ScriptedModel.layer([ScriptedModel.text("Hello")]),
        workflows: [support.workflow]
      })
      const result = await client.run(support, { runId: "v-1", tenant, prompt: "Hi", model: "scripted" })
      expect(result.status).toBe("completed")
      await client.close()
      const run = await Effect.runPromise(Effect.flatMap(EventStore.EventStore, (store) => store.getRun(tenant.tenantId, "v-1")).pipe(
        Effect.provide(SqliteStore.layer({ filename }))
      ))
      expect(run).toMatchObject({ workflow: "agent:support", version: "2026-11-26" })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
