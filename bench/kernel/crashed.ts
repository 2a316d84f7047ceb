// The crashed run that `resume.ts`, `resumeCpu.ts` and `replayWorker.ts` resume or replay: `n` durable tool steps, then a
// memoized step during which the process "dies" (a defect: nothing of that step is logged, and a resume meets it as new).
import { Cause, Effect, Exit, type ManagedRuntime, Schema } from "effect"
import { type EventStore, type Kernel, Workflow } from "@artana/core"
import { echo } from "../fixtures.js"

export const CRASH = "the process died here (benchmark)"

/** The workflow; `reached` runs when the code reaches its step after the tool steps (the first new one on a resume). */
export const crashingWorkflow = (reached: () => void = () => undefined) =>
  Workflow.make({
    name: "bench.crashing",
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Number,
    run: ({ n }, ctx) =>
      Effect.gen(function*() {
        for (let i = 0; i < n; i++) yield* ctx.tool(echo, { i, note: "a durable step of the benchmark" })
        return yield* ctx.step("after-crash", Effect.zipRight(Effect.sync(reached), Effect.dieMessage(CRASH)), Schema.Number)
      })
  })

/** Runs `effect` (an execution or a resume of the workflow) and checks that it crashed where the workflow dies. */
export const crashed = async (runtime: ManagedRuntime.ManagedRuntime<Kernel.Kernel | EventStore.EventStore, unknown>, effect: Effect.Effect<unknown, unknown, Kernel.Kernel>) => {
  const exit = await runtime.runPromiseExit(effect)
  if (Exit.isSuccess(exit) || !Cause.pretty(exit.cause).includes(CRASH)) {
    throw new Error(`the run did not crash: ${Exit.isSuccess(exit) ? "it succeeded" : Cause.pretty(exit.cause)}`)
  }
}
