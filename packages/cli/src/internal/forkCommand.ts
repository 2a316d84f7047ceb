/**
 * `artana fork RUN (--at SEQ | --step KEY) [--set STEP=JSON ...] [--id FORK]`: writes a fork of a run
 * (`Kernel.forkLog`): a new run whose log is the run's prefix, cut back to a step boundary, re-chained under the
 * fork's id, with the `--set` results in place. It runs no workflow code; it prints the fork's id and how to go on.
 */
import { Errors, EventStore, Json, Kernel } from "@artana/core"
import type { Fork } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as ExitCode from "../ExitCode.js"
import * as Plan from "../Plan.js"
import * as PlanRunner from "../PlanRunner.js"
import * as Database from "./database.js"
import * as Hints from "./hints.js"
import * as Out from "./output.js"
import * as Services from "./services.js"

export interface ForkArgs extends Out.Reporting {
  readonly db: string
  readonly tenant: string
  readonly run: string
  readonly at: number | undefined
  readonly step: string | undefined
  /** `STEP=JSON`, each. */
  readonly set: ReadonlyArray<string>
  readonly id: string | undefined
  readonly auditKey: Redacted.Redacted<string> | undefined
}

const invalid = (what: string, reason: string) => new Errors.InvalidInput({ what, reason })

/** A plan run's steps are named by their ids (`fetch`), its log's by step keys (`step:fetch`): both are taken. */
const keyOf = (isPlan: boolean, step: string) => (isPlan && Plan.stepIdOf(step) === undefined ? Plan.stepKey(step) : step)

/** `--set STEP=JSON` values, by step key. */
const overridesOf = (isPlan: boolean, set: ReadonlyArray<string>): Effect.Effect<Fork.ForkOverrides, Errors.InvalidInput> =>
  Effect.suspend(() => {
    const overrides: Record<string, Json.Json> = {}
    for (const entry of set) {
      const eq = entry.indexOf("=")
      if (eq <= 0) return Effect.fail(invalid("--set", `"${entry}" is not STEP=JSON (e.g. --set 'fetch={"status":200}')`))
      let parsed: unknown
      try {
        parsed = JSON.parse(entry.slice(eq + 1))
      } catch (e) {
        return Effect.fail(invalid(`--set ${entry.slice(0, eq)}`, `not JSON (${e instanceof Error ? e.message : String(e)}); quote it for the shell`))
      }
      const json = Json.fromUnknown(parsed)
      if (!json.ok) return Effect.fail(invalid(`--set ${entry.slice(0, eq)}`, json.error))
      overrides[keyOf(isPlan, entry.slice(0, eq))] = json.json
    }
    return Effect.succeed(overrides)
  })

/** Where the fork's prefix ends: exactly one of `--at` and `--step`. */
const pointOf = (args: ForkArgs, isPlan: boolean): Effect.Effect<Fork.ForkPoint, Errors.InvalidInput> => {
  if (args.at !== undefined && args.step !== undefined) return Effect.fail(invalid("fork point", "give --at SEQ or --step KEY, not both"))
  if (args.at !== undefined) return Effect.succeed({ atSeq: args.at })
  if (args.step !== undefined) return Effect.succeed({ atStep: keyOf(isPlan, args.step) })
  return Effect.fail(invalid("fork point", "give --at SEQ (the last event the fork keeps) or --step KEY"))
}

export const fork = (args: ForkArgs) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    const opened = yield* Layer.build(Database.layer(Database.parse(args.db), { create: false }))
    const work = Effect.gen(function*() {
      const source = yield* (yield* EventStore.EventStore).getRun(args.tenant, args.run)
      const isPlan = source.workflow === PlanRunner.WORKFLOW
      const point = yield* pointOf(args, isPlan)
      const overrides = yield* overridesOf(isPlan, args.set)
      const kernel = yield* Kernel.Kernel
      const forked = yield* kernel.forkLog({ ...point, tenantId: args.tenant, runId: args.run, overrides, forkRunId: args.id })
      return { forked, isPlan, workflow: source.workflow }
    })
    const { forked, isPlan, workflow } = yield* work.pipe(Effect.provide(Services.kernel({ store: Layer.succeedContext(opened), auditKey: args.auditKey })))
    const showRun = Hints.readOn(args, "show-run", forked.runId, [])
    const goOn = isPlan ? Hints.continueRun(args, forked.runId) : `resume run ${forked.runId} where workflow "${workflow}" runs (Kernel.resume, or a worker)`
    if (args.format === "json") {
      yield* Out.json({ runId: forked.runId, forkedFrom: forked.forkedFrom, created: forked.created, workflow, showRun, next: goOn })
      return ExitCode.Ok
    }
    const s = Out.outStyle()
    const { seq, overridden } = forked.forkedFrom
    const cut = args.at !== undefined && seq < args.at ? ` (cut back from ${args.at} to the step boundary before it)` : ""
    yield* Out.stdout([
      `${s.green("✓")} ${forked.created ? "forked" : "fork exists:"} run ${s.bold(args.run)} at seq ${seq}${cut} → ${s.bold(forked.runId)}`,
      ...(overridden === undefined ? [] : [`  replaced  ${overridden.map(Hints.stepName).join(", ")}`]),
      `  show it   ${showRun}`,
      `  go on     ${goOn}`
    ].join("\n"))
    return ExitCode.Ok
  })))
