// What a durable step costs the runtime, counted, not timed: the Effect nodes the fiber runtime evaluates per step of a
// long sequential run (a supervisor with op supervision counts them), on the in-memory store. Deterministic, unlike
// CPU time on a loaded machine, so a change that makes the hot path heavier fails here rather than only showing in
// `pnpm bench kernel`. Found needed: tracking every tool handler for concurrent branches took a sequential tool step
// from 24 to 71 nodes (about 10 us of CPU a step), and no test saw it.
// The ceilings are the counts when this test was written plus a little room: raise one only for a reason that belongs
// on the hot path, and say so in the commit.
import { describe, expect, it } from "@effect/vitest"
import { Kernel, Tool, Workflow } from "@artana/core"
import { Effect, RuntimeFlags, RuntimeFlagsPatch, Schema, Supervisor } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

const make = (name: string, durability?: "one-commit") =>
  Tool.make({
    name,
    description: "Returns its input",
    parameters: Schema.Struct({ i: Schema.Number }),
    idempotent: true,
    ...(durability === undefined ? {} : { durability }),
    handler: (args) => Effect.succeed({ ok: true, i: args.i })
  })
const twoPhase = make("echo")
const oneCommit = make("echo_one_commit", "one-commit")
const Value = Schema.Struct({ ok: Schema.Boolean, i: Schema.Number })

type Kind = "tool" | "tool_one_commit" | "step"
const steps = Workflow.make({
  name: "step-nodes",
  input: Schema.Struct({ n: Schema.Number, kind: Schema.Literal("tool", "tool_one_commit", "step") }),
  output: Schema.Number,
  run: ({ kind, n }, ctx) =>
    Effect.gen(function*() {
      for (let i = 0; i < n; i++) {
        if (kind === "tool") yield* ctx.tool(twoPhase, { i })
        else if (kind === "tool_one_commit") yield* ctx.tool(oneCommit, { i })
        else yield* ctx.step("s", Effect.succeed({ ok: true, i }), Value)
      }
      return n
    })
})

class Counter extends Supervisor.AbstractSupervisor<void> {
  value = Effect.void
  nodes = 0
  override onEffect(): void {
    this.nodes++
  }
}

/** The nodes a run of `n` steps of `kind` evaluates. */
const nodesOf = (runId: string, kind: Kind, n: number) =>
  Effect.gen(function*() {
    const kernel = yield* Kernel.Kernel
    const counter = new Counter()
    yield* kernel.execute(steps, { runId, tenant, input: { n, kind } }).pipe(
      Effect.supervised(counter),
      Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
    )
    return counter.nodes
  })

const N = 500

describe("Effect nodes per durable step of a sequential run (in-memory store)", () => {
  it.effect.each([
    // 24.3, 17.2 and 13.2 when written.
    ["tool", 28],
    ["tool_one_commit", 19],
    ["step", 15]
  ] as const)("%s: at most %d", ([kind, ceiling]) =>
    Effect.gen(function*() {
      yield* nodesOf(`warm-${kind}`, kind, 50)
      const none = yield* nodesOf(`none-${kind}`, kind, 0)
      const many = yield* nodesOf(`many-${kind}`, kind, N)
      const perStep = (many - none) / N
      expect(perStep).toBeGreaterThan(5)
      expect(perStep).toBeLessThanOrEqual(ceiling)
    }).pipe(Effect.provide(kernelLayer([], [twoPhase, oneCommit]))))
})
