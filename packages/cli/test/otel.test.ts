// `artana run` exports its run's spans over OTLP/HTTP when an OTLP endpoint is set in its environment.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { OtlpReceiver } from "@artana/otel/testing"
import { artanaJson, cleanup, planWorkspace } from "./helpers.js"

afterAll(cleanup)

const POLICY = `default: deny
tools:
  fs.read: { allow: true, paths: ["workspace/**"] }
`
const PLAN = `on_error: continue
steps:
  - { id: notes, tool: fs.read, args: { path: workspace/notes.txt } }
  - { id: peek, tool: fs.read, args: { path: /etc/passwd } }
`

describe("artana run with OTEL_EXPORTER_OTLP_ENDPOINT set", () => {
  it.live("exports the run's span and its tool steps (the denied one says why) under OTEL_SERVICE_NAME", () =>
    Effect.acquireUseRelease(
      Effect.promise(() => OtlpReceiver.start()),
      (receiver) =>
        Effect.gen(function*() {
          const cwd = planWorkspace(PLAN, POLICY)
          const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_SERVICE_NAME: "artana-cli-test" }
          const run = yield* artanaJson(["run", "plan.yaml", "--policy", "policy.yaml", "--run-id", "traced-1"], { cwd, env })
          expect(run.json).toEqual({ runId: "traced-1", status: "completed" })
          const spans = receiver.spans.filter((s) => s.service === "artana-cli-test")
          const runSpan = spans.find((s) => s.name === "artana.run")
          expect(runSpan?.attributes).toMatchObject({ "artana.run_id": "traced-1", "artana.status": "completed" })
          const tools = spans.filter((s) => s.name === "artana.tool" && s.parentSpanId === runSpan?.spanId)
          expect(tools.map((t) => [t.attributes["gen_ai.tool.name"], t.attributes["artana.tool.decision"]])).toEqual([["fs.read", "allowed"], ["fs.read", "denied"]])
          expect(String(tools[1]!.attributes["artana.policy.reason"])).toContain("/etc/passwd")
        }),
      (receiver) => Effect.promise(() => receiver.close())
    ), 120_000)
})
