/** How a run ends: its extensions' `onFinish` hooks learn the outcome, in order, each with step keys of its own. */
import type { Errors } from "@artana/core"
import * as Effect from "effect/Effect"
import type { ContextOverflow } from "../AgentErrors.js"
import type { Extension, FinishError, Outcome } from "../Extension.js"
import { conversation, type Run } from "./run.js"

/** Runs the extensions' `onFinish` hooks on the run's outcome, after `turns` turns. */
export const finish = (run: Run, outcome: Outcome, turns: number): Effect.Effect<void, FinishError> =>
  Effect.forEach(
    (run.agent.options.extensions ?? []).filter((e): e is Extension & { onFinish: NonNullable<Extension["onFinish"]> } => e.onFinish !== undefined),
    (e) =>
      e.onFinish({
        ctx: run.ctx,
        agent: run.agent.name,
        task: run.task,
        model: run.model,
        outcome,
        messages: conversation(run),
        turns,
        key: (name) => `finish:${e.name}:${name}`
      }),
    { discard: true }
  )

/** Fails the run with `error`, once the hooks have learnt of it. */
export const failWith = <E extends Errors.OutputDecodeError | Errors.MaxTurnsExceeded | ContextOverflow>(
  run: Run,
  error: E,
  turns: number
): Effect.Effect<never, E | FinishError> =>
  Effect.zipRight(finish(run, { _tag: "failure", errorTag: error._tag, message: error.message }, turns), Effect.fail(error))
