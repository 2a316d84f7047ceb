// The spans of an agent run, as a collector receives them over OTLP/HTTP: a run with a sub-agent, a denied tool and a
// pause for approval, resumed in another process. One trace per execution, linked to the execution before it and
// (the sub-agent's) to its caller; GenAI attributes; and no prompt or tool content unless content capture is on.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { Artana, EventStore, Kernel, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { Effect, Either, Layer, Schema } from "effect"
import { ScriptedModel } from "@artana/core/testing"
import { AgentClient } from "@artana/agent"
import { SqliteStore } from "@artana/store-sqlite"
import { Pii } from "@artana/middleware"
import { ArtanaOtel } from "@artana/otel"
import { afterPause, analyst, beforePause, refund as refundTool, SECRET_ARGUMENT, SECRET_PROMPT, SECRET_RESULT, tenant } from "./fixtures/agents.js"
import { OtlpReceiver as Otlp } from "@artana/otel/testing"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CHILD = fileURLToPath(new URL("./fixtures/resume.ts", import.meta.url))
const run = promisify(execFile)

const named = (spans: ReadonlyArray<Otlp.Span>, name: string) => spans.filter((s) => s.name === name)
const one = (spans: ReadonlyArray<Otlp.Span>, predicate: (s: Otlp.Span) => boolean) => {
  const found = spans.filter(predicate)
  expect(found).toHaveLength(1)
  return found[0]!
}
/** The spans of `root`'s trace under it, by name, one level at a time. */
const childrenOf = (spans: ReadonlyArray<Otlp.Span>, parent: Otlp.Span) => spans.filter((s) => s.parentSpanId === parent.spanId && s.traceId === parent.traceId)

describe("traces exported over OTLP/HTTP", () => {
  let receiver: Otlp.Receiver
  let dir: string
  beforeAll(async () => {
    receiver = await Otlp.start()
    dir = mkdtempSync(join(tmpdir(), "artana-otel-"))
  })
  afterAll(async () => {
    await receiver.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("an agent run paused here and resumed in another process: the tree, the GenAI attributes, the links across the resume and to the sub-agent, and no content", async () => {
    const filename = join(dir, "artana.db")
    const client = AgentClient.create({
      store: SqliteStore.layer({ filename }),
      model: ScriptedModel.layer(beforePause),
      middleware: [Pii.middleware()],
      services: [ArtanaOtel.layer({ url: `${receiver.endpoint}/v1/traces`, protocol: "http/json", serviceName: "artana-test" })]
    })
    let approvalId = ""
    try {
      const paused = await client.run(analyst, { runId: "r-1", tenant, prompt: SECRET_PROMPT })
      expect(paused).toMatchObject({ status: "paused", approval: { tool: "refund" } })
      approvalId = paused.status === "paused" ? paused.approval!.approvalId : ""
    } finally {
      await client.close() // flushes the spans
    }
    const env = {
      ...process.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "artana-resumer"
    }
    const child = await run(process.execPath, ["--import", "tsx", CHILD, filename, "r-1", approvalId], { cwd: REPO_ROOT, env, timeout: 300_000 })
    expect(JSON.parse(child.stdout)).toMatchObject({ status: "completed", output: { output: "Report done; refund sent." } })

    const spans = receiver.spans
    expect(receiver.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true)
    // Two executions of the parent (here, then in the other process) and one of the sub-agent: three traces.
    const runs = named(spans, "artana.run")
    const first = one(runs, (s) => s.attributes["artana.run_id"] === "r-1" && s.service === "artana-test")
    const resumed = one(runs, (s) => s.attributes["artana.run_id"] === "r-1" && s.service === "artana-resumer")
    const subRun = one(runs, (s) => s.attributes["artana.parent_run_id"] === "r-1")
    expect(new Set([first.traceId, resumed.traceId, subRun.traceId]).size).toBe(3)
    expect(first.attributes).toMatchObject({ "artana.tenant_id": "acme", "artana.root_run_id": "r-1", "artana.mode": "live", "artana.status": "paused", "artana.workflow": "agent:analyst" })
    expect(resumed.attributes).toMatchObject({ "artana.status": "completed", "artana.root_run_id": "r-1" })
    expect(subRun.attributes).toMatchObject({ "artana.run_id": "r-1::sub_agent::r-1/turn:0/tool:0", "artana.root_run_id": "r-1", "artana.status": "completed" })

    // The resume links to the execution before it, in the other process's trace.
    const previous = resumed.links.find((l) => l.attributes["artana.link"] === "previous_execution")
    expect(previous?.traceId).toBe(first.traceId)

    // The first execution's tree: model steps and tool steps under the run, appends under the steps.
    const steps = childrenOf(spans, first)
    const models = steps.filter((s) => s.name === "artana.model")
    const tools = steps.filter((s) => s.name === "artana.tool")
    expect(models.length).toBe(3)
    expect(tools.map((t) => t.attributes["gen_ai.tool.name"])).toEqual(["research", "wipe_ledger", "refund"])
    for (const m of models) {
      expect(m.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "scripted",
        "gen_ai.response.model": "scripted",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        "artana.cost_usd": 0
      })
      expect(childrenOf(spans, m).map((s) => s.name)).toContain("artana.append")
    }
    // The PII scrubber's decision on the first call: its counts, not what it found.
    expect(models[0]!.attributes).toMatchObject({ "artana.middleware.pii.scrubbed": true, "artana.middleware.pii.scrubbed.counts.email": 1 })
    const [research, wipe, refund] = tools
    expect(research!.attributes).toMatchObject({ "artana.tool.decision": "allowed", "artana.tool.outcome": "ok", "gen_ai.operation.name": "execute_tool" })
    expect(wipe!.attributes).toMatchObject({
      "artana.tool.decision": "denied",
      "artana.tool.outcome": "PolicyDenied",
      "artana.policy.denied": true,
      "artana.policy.capability": "ledger:admin",
      "artana.policy.reason": 'tenant acme lacks capability "ledger:admin"'
    })
    expect(refund!.attributes).toMatchObject({ "artana.tool.decision": "approval_requested", "artana.approval_id": approvalId })

    // The sub-agent's run is linked to the parent's research call: its caller span is in the parent's trace.
    const caller = subRun.links.find((l) => l.attributes["artana.link"] === "caller")
    const callerSpan = one(spans, (s) => s.spanId === caller?.spanId)
    expect(callerSpan.traceId).toBe(first.traceId)
    let up: Otlp.Span | undefined = callerSpan
    while (up !== undefined && up.spanId !== research!.spanId) up = spans.find((s) => s.spanId === up!.parentSpanId)
    expect(up?.spanId).toBe(research!.spanId)
    expect(childrenOf(spans, subRun).map((s) => s.name).sort()).toEqual(["artana.model", "artana.model", "artana.tool"])

    // After the resume: the approved refund runs, then the last model step.
    const after = childrenOf(spans, resumed)
    expect(after.filter((s) => s.name === "artana.tool").map((s) => s.attributes)).toMatchObject([{ "gen_ai.tool.name": "refund", "artana.tool.outcome": "ok" }])
    expect(after.filter((s) => s.name === "artana.model")).toHaveLength(1)

    // No content left either process: not the prompt, not a tool's arguments or result, in any span or attribute.
    const wire = receiver.bodies.join("\n")
    for (const secret of [SECRET_PROMPT, "jane.roe@example.com", SECRET_ARGUMENT, SECRET_RESULT, "EMEA made 1.2M"]) expect(wire).not.toContain(secret)
  }, 600_000)

  it("with content capture on, the spans carry the prompt, the arguments (an approver's edit included) and the results", async () => {
    const EDITED_ORDER = "order-EDITED-5150"
    const filename = join(dir, "capture.db")
    const client = AgentClient.create({
      store: SqliteStore.layer({ filename }),
      model: ScriptedModel.layer([ScriptedModel.toolCall("refund", { order: SECRET_ARGUMENT, amount: 5 }), ...afterPause]),
      services: [ArtanaOtel.layer({ url: `${receiver.endpoint}/v1/traces`, protocol: "http/json", serviceName: "artana-capture", captureContent: true })]
    })
    try {
      const paused = await client.run(analyst, { runId: "c-1", tenant, prompt: SECRET_PROMPT })
      const approvalId = paused.status === "paused" ? paused.approval!.approvalId : ""
      // Approved with the order edited: the span shows the arguments the call was made with.
      await client.decide({ tenantId: tenant.tenantId, approvalId, approver: "lead", decision: "approve", arguments: { order: EDITED_ORDER, amount: 5 }, tool: refundTool })
      expect(await client.run(analyst, { runId: "c-1", tenant, prompt: SECRET_PROMPT })).toMatchObject({ status: "completed" })
    } finally {
      await client.close()
    }
    const spans = receiver.spans.filter((s) => s.service === "artana-capture")
    const model = named(spans, "artana.model")[0]!
    expect(String(model.attributes["gen_ai.input.messages"])).toContain(SECRET_PROMPT)
    const refund = one(named(spans, "artana.tool"), (s) => s.attributes["artana.tool.outcome"] === "ok")
    expect(String(refund.attributes["gen_ai.tool.call.arguments"])).toContain(EDITED_ORDER)
    expect(String(refund.attributes["gen_ai.tool.call.arguments"])).not.toContain(SECRET_ARGUMENT)
    expect(String(refund.attributes["gen_ai.tool.call.result"])).toContain(SECRET_RESULT)
  }, 120_000)

  it("a budget stop annotates the model step that crossed it, and the run's span ends in error", async () => {
    const artana = Artana.create({
      model: ScriptedModel.layer([ScriptedModel.text("expensive", { costUsd: 5 })]),
      services: [ArtanaOtel.layer({ url: `${receiver.endpoint}/v1/traces`, protocol: "http/json", serviceName: "artana-budget" })]
    })
    const poor = Tenant.TenantContext.make({ tenantId: "poor", capabilities: [], budgetUsdLimit: 1 })
    try {
      await expect(artana.chat({ runId: "b-1", tenant: poor, prompt: "Think hard" })).rejects.toMatchObject({ _tag: "BudgetExceeded" })
    } finally {
      await artana.close()
    }
    const spans = receiver.spans.filter((s) => s.service === "artana-budget")
    const runSpan = one(named(spans, "artana.run"), (s) => s.attributes["artana.run_id"] === "b-1")
    expect(runSpan.statusCode).toBe(2)
    const model = one(childrenOf(spans, runSpan), (s) => s.name === "artana.model")
    expect(model.attributes).toMatchObject({
      "artana.cost_usd": 5,
      "artana.budget.exceeded": true,
      "artana.budget.phase": "after_call",
      "artana.budget.limit_usd": 1,
      "artana.budget.spent_usd": 5
    })
  }, 120_000)

  it("a failed step's error text (a tool's message naming its argument) leaves only under content capture; the run fails with it all the same", async () => {
    const email = "ann.secret@acme.example"
    const lookup = Tool.make({
      name: "crm.lookup",
      description: "Finds a customer by email",
      parameters: Schema.Struct({ email: Schema.String }),
      handler: ({ email }) => Effect.fail(new Error(`no customer with email ${email}`))
    })
    const find = Workflow.make({ name: "find", input: Schema.Struct({ email: Schema.String }), output: Schema.Unknown, run: (input, ctx) => ctx.tool(lookup, input) })
    const attempt = async (serviceName: string, captureContent: boolean) => {
      const layer = Layer.provideMerge(Kernel.layer({ workflows: [find] }), Layer.mergeAll(EventStore.layerMemory, ScriptedModel.layer([]), ToolRegistry.layer([lookup])))
      const result = await Effect.runPromise(Effect.flatMap(Kernel.Kernel, (k) => Effect.either(k.execute(find, { runId: `err-${serviceName}`, tenant, input: { email } }))).pipe(
        Effect.provide(layer),
        Effect.provide(ArtanaOtel.layer({ url: `${receiver.endpoint}/v1/traces`, protocol: "http/json", serviceName, captureContent }))
      ))
      expect(Either.isLeft(result) && result.left.message).toContain(email)
      const spans = receiver.spans.filter((s) => s.service === serviceName)
      expect(one(named(spans, "artana.run"), () => true).statusCode).toBe(2)
      // What went over the wire for this service: the status message, exception events and stacks included.
      return receiver.bodies.filter((b) => b.includes(serviceName)).join("\n")
    }
    expect(await attempt("artana-error-quiet", false)).not.toContain(email)
    expect(await attempt("artana-error-content", true)).toContain(email)
  }, 120_000)
})

