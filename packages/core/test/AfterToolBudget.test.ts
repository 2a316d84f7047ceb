import { describe, expect, it } from "@effect/vitest"
import { Errors, EventStore, Kernel, type Middleware, Tool, Workflow } from "@artana/core"
import { Effect, Either, Schema } from "effect"
import { kernelLayer, tenant } from "./fixtures.js"

/**
 * An `afterTool` hook stops the run over budget (a documented ability: "A hook may ... stop the run
 * (`BudgetExceeded`)"). The run fails for good with `BudgetExceeded`; its replay (kernel.replay, artana replay-test)
 * must agree with the log, running no tool.
 */
const quota: Middleware.Interceptor = {
  name: "tool-quota",
  afterTool: (_call, _result, ctx) =>
    Effect.fail(new Errors.BudgetExceeded({ runId: ctx.runId, limitUsd: ctx.tenant.budgetUsdLimit, spentUsd: ctx.tenant.budgetUsdLimit }))
}

describe("a run an afterTool hook stopped over budget", () => {
  for (const durability of ["two-phase", "one-commit"] as const) {
    it.effect(`replays as the failure it was, running no tool (${durability})`, () => {
      let calls = 0
      const lookup = Tool.make({
        name: "lookup",
        description: "looks up",
        parameters: Schema.Struct({ q: Schema.String }),
        idempotent: true,
        durability,
        handler: () => Effect.sync(() => ++calls)
      })
      const wf = Workflow.make({
        name: "quota",
        input: Schema.Null,
        output: Schema.Unknown,
        run: (_i, ctx) => ctx.tool(lookup, { q: "x" })
      })
      return Effect.gen(function*() {
        const kernel = yield* Kernel.Kernel
        const live = yield* Effect.either(kernel.execute(wf, { runId: "q", tenant, input: null }))
        expect(Either.isLeft(live) && live.left._tag).toBe("BudgetExceeded")
        const log = yield* (yield* EventStore.EventStore).readEvents(tenant.tenantId, "q")
        const replayed = yield* Effect.either(kernel.replay(wf, { tenantId: tenant.tenantId, runId: "q" }))
        expect({
          log: log.map((e) => `${e.stepKey}:${e.payload._tag}`),
          replay: Either.isLeft(replayed) ? `${replayed.left._tag}: ${replayed.left.message}` : replayed.right.status,
          calls
        }).toMatchObject({ replay: expect.stringMatching(/^BudgetExceeded/), calls: 1 })
      }).pipe(Effect.provide(kernelLayer([], [lookup], { middleware: [quota] })))
    })
  }
})
