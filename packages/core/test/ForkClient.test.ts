// The Promise client's fork: the same kernel call as `Kernel.fork`, under `Artana.create`.
import { describe, expect, it } from "vitest"
import { Artana, Fork } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { ForkSuite } from "@artana/core/testing/suites"

const { replies, tenant, tools, workflow } = ForkSuite.Tour

describe("Artana.create: fork", () => {
  it("forks a run with an override and drives the fork to its next wait; forkLog again finds the same fork", async () => {
    const client = Artana.create({ model: ScriptedModel.layer(replies), tools, workflows: [workflow] })
    try {
      const first = await client.run(workflow, { runId: "c-1", tenant, input: { topic: "hi" } })
      expect(first).toMatchObject({ status: "paused", reason: "confirm" })
      const forked = await client.fork({ tenantId: tenant.tenantId, runId: "c-1", atStep: "pick", overrides: { pick: 3 }, workflow })
      const forkRunId = Fork.forkRunId("c-1", 6, { pick: 3 })
      expect(forked).toMatchObject({ status: "paused", runId: forkRunId, reason: "confirm" })
      const done = await client.resume({ tenantId: tenant.tenantId, runId: forkRunId, workflow, response: "yes" })
      expect(done).toMatchObject({ status: "paused", approval: { tool: "pay", arguments: '{"amount":3}' } })
      expect(await client.forkLog({ tenantId: tenant.tenantId, runId: "c-1", atStep: "pick", overrides: { pick: 3 } })).toEqual({
        runId: forkRunId,
        forkedFrom: { runId: "c-1", seq: 6, overridden: ["pick"] },
        created: false
      })
      expect((await client.verify({ tenantId: tenant.tenantId, runId: "c-1" })).ok).toBe(true)
    } finally {
      await client.close()
    }
  }, 60_000)
})
