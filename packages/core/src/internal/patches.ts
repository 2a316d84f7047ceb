/**
 * `ctx.patched(id)` and `ctx.deprecatePatch(id)`: code that changes under runs in flight, as Temporal's `patched` and
 * `deprecatePatch`. The first call of a patch in a run looks for its marker in the log (a `StepCompleted` named
 * `patched` under the step key `patched:<id>`, outside the positional step counter, so old runs keep their keys):
 * recorded, the run took the new path; absent where the log goes on, the run passed this point before the change and
 * takes the old path; absent at the log's end, the run is here for the first time: the marker is written (live) and
 * the new path taken. The answer holds for the rest of the execution.
 */
import * as Effect from "effect/Effect"
import { PATCH_STEP_NAME, patchKey, type Probed } from "./replayCursor.js"
import type { StepEnv } from "./stepEnv.js"

export const make = (env: StepEnv) => {
  // Per execution, as Temporal memoizes a patch's answer per workflow execution.
  const answers = new Map<string, boolean>()

  const settle = (patchId: string, found: Probed, deprecated: boolean): Effect.Effect<boolean> => {
    switch (found._tag) {
      case "Diverged":
        return env.fault(found.error)
      case "Recorded":
        return Effect.succeed(true)
      // `deprecatePatch` takes the new path whatever the log says: deprecate a patch once no run that passed it
      // before the change can be replayed any more.
      case "Passed":
        return Effect.succeed(deprecated)
      case "New":
        // A replay writes nothing: it answers what a live execution would.
        return env.mode === "replay"
          ? Effect.succeed(true)
          : Effect.as(env.append(patchKey(patchId), [{ _tag: "StepCompleted", name: PATCH_STEP_NAME, value: patchId }]), true)
    }
  }

  const answer = (patchId: string, deprecated: boolean): Effect.Effect<boolean> =>
    Effect.suspend(() => {
      const known = answers.get(patchId)
      if (known !== undefined) return Effect.succeed(known)
      const halted = env.halted()
      if (halted !== undefined) return env.halt(halted)
      const found = env.cursor.probe(patchKey(patchId), !deprecated)
      const settled = found._tag === "Pending"
        ? Effect.flatMap(env.loaded(found), (probed) => settle(patchId, probed, deprecated))
        : settle(patchId, found, deprecated)
      return Effect.tap(settled, (value) => Effect.sync(() => answers.set(patchId, value)))
    })

  return {
    patched: (patchId: string): Effect.Effect<boolean> => answer(patchId, false),
    deprecatePatch: (patchId: string): Effect.Effect<void> => Effect.asVoid(answer(patchId, true))
  }
}
