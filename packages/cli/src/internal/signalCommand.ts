/**
 * `artana signal RUN NAME [--payload JSON]`: delivers a durable message to a run (`Kernel.signal`), which its code
 * takes with `ctx.waitForSignal(NAME, schema)`. The signal is written into the run's log; a process waiting in that
 * run reads it there, and a run that is not at its wait yet (or not running anywhere) takes it when it gets there.
 */
import { Errors, Json, Kernel } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as ExitCode from "../ExitCode.js"
import * as Database from "./database.js"
import * as Out from "./output.js"
import * as Services from "./services.js"

export interface SignalArgs extends Out.Reporting {
  readonly db: string
  readonly tenant: string
  readonly run: string
  readonly name: string
  /** The payload as JSON text; `null` when absent. */
  readonly payload: string | undefined
  /** The signal's de-duplication key (`Kernel.signal`'s `id`). */
  readonly id?: string | undefined
  readonly auditKey: Redacted.Redacted<string> | undefined
}

const parsePayload = (text: string | undefined): Effect.Effect<Json.Json, Errors.InvalidInput> => {
  if (text === undefined) return Effect.succeed(null)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (e) {
    return Effect.fail(new Errors.InvalidInput({
      what: "--payload",
      reason: `not JSON (${e instanceof Error ? e.message : String(e)}); quote it for the shell, e.g. --payload '{"approve":true}'`
    }))
  }
  const json = Json.fromUnknown(parsed)
  return json.ok ? Effect.succeed(json.json) : Effect.fail(new Errors.InvalidInput({ what: "--payload", reason: json.error }))
}

export const signal = (args: SignalArgs) =>
  Out.command(args, Effect.scoped(Effect.gen(function*() {
    const payload = yield* parsePayload(args.payload)
    const opened = yield* Layer.build(Database.layer(Database.parse(args.db), { create: false }))
    const receipt = yield* Effect.flatMap(Kernel.Kernel, (kernel) => kernel.signal({ tenantId: args.tenant, runId: args.run, name: args.name, payload, id: args.id })).pipe(
      Effect.provide(Services.kernel({ store: Layer.succeedContext(opened), auditKey: args.auditKey }))
    )
    if (args.format === "json") {
      yield* Out.json({ runId: receipt.runId, name: args.name, signalId: receipt.signalId, seq: receipt.seq, duplicate: receipt.duplicate === true })
    } else {
      const s = Out.outStyle()
      yield* Out.stdout(receipt.duplicate === true
        ? `${s.green("✓")} signal ${s.bold(args.name)} of id ${receipt.signalId} was already delivered to run ${s.bold(receipt.runId)} (seq ${receipt.seq}): not sent again`
        : `${s.green("✓")} signal ${s.bold(args.name)} delivered to run ${s.bold(receipt.runId)} (seq ${receipt.seq}, id ${receipt.signalId})`)
    }
    return ExitCode.Ok
  })))
