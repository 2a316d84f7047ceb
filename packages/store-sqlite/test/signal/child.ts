// One process's part of the signal tests: `node --import tsx child.ts <command> --db FILE --run ID [...]`.
// Commands: `execute` (start or continue the run of `waiter`; `--poll-ms` how often its wait reads the log), `signal --name N --payload JSON`. Prints one JSON line,
// {"outcome":"result","result":...} or {"outcome":"error","error":{"_tag",...}}, and exits 0 or 3.
import { parseArgs } from "node:util"
import { Cause, Duration, Effect, Exit, Option, Predicate } from "effect"
import { Kernel } from "@artana/core"
import { layer, tenant, waiter } from "./workflows.js"

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    db: { type: "string" },
    run: { type: "string" },
    name: { type: "string", default: "decision" },
    payload: { type: "string", default: "null" },
    "timeout-ms": { type: "string" },
    "pause-first": { type: "boolean", default: false },
    "poll-ms": { type: "string" }
  }
})
const db = values.db ?? ""
const runId = values.run ?? ""

const program = Effect.gen(function*() {
  const kernel = yield* Kernel.Kernel
  switch (positionals[0]) {
    case "execute":
      return yield* kernel.execute(waiter, {
        runId,
        tenant,
        input: {
          pauseFirst: values["pause-first"],
          ...(values["timeout-ms"] === undefined ? {} : { timeoutMillis: Number(values["timeout-ms"]) })
        }
      })
    case "resume":
      return yield* kernel.resume({ tenantId: tenant.tenantId, runId, workflow: waiter })
    case "signal":
      return yield* kernel.signal({ tenantId: tenant.tenantId, runId, name: values.name, payload: JSON.parse(values.payload) })
    default:
      return yield* Effect.dieMessage(`unknown command ${String(positionals[0])}`)
  }
}).pipe(Effect.provide(layer(db, undefined, values["poll-ms"] === undefined ? undefined : Duration.millis(Number(values["poll-ms"])))))

const exit = await Effect.runPromiseExit(program)
if (Exit.isSuccess(exit)) {
  console.log(JSON.stringify({ outcome: "result", result: exit.value }))
} else {
  const failure = Cause.failureOption(exit.cause)
  const error = Option.getOrUndefined(failure)
  console.log(JSON.stringify(
    Option.isSome(failure)
      ? { outcome: "error", error: { _tag: Predicate.hasProperty(error, "_tag") ? String(error._tag) : "unknown", message: String(error) } }
      : { outcome: "defect", cause: Cause.pretty(exit.cause) }
  ))
  process.exitCode = Option.isSome(failure) ? 3 : 1
}
