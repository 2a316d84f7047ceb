// One process's part of a recovery test: `node --import tsx main.ts <command> --db FILE --dir DIR --run ID ...`.
// Prints one JSON line, {"outcome":"result","result":...} or {"outcome":"error","error":{"_tag",...}}, and
// exits 0 (result), 3 (typed error) or 1 (defect). At its crash point the process dies by SIGKILL instead.
import { parseArgs } from "node:util"
import { Cause, Effect, Exit, Option, Predicate, Schema } from "effect"
import { Json, Kernel } from "@artana/core"
import { type Killer, makeFixture, tenant } from "./workflows.js"

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    db: { type: "string" },
    dir: { type: "string" },
    run: { type: "string" },
    workflow: { type: "string", default: "crashy" },
    "crash-at": { type: "string" },
    killer: { type: "string", default: "self" },
    variant: { type: "string", default: "A" },
    barrier: { type: "string" },
    response: { type: "string" },
    outcome: { type: "string" },
    durability: { type: "string", default: "two-phase" }
  }
})

const required = (name: string, value: string | undefined): string => {
  if (value === undefined) throw new Error(`missing --${name}`)
  return value
}

const command = positionals[0]
const db = required("db", values.db)
const dir = required("dir", values.dir)
const runId = required("run", values.run)
const killer: Killer = values.killer === "parent" ? "parent" : "self"
const fixture = makeFixture({
  dir,
  crashAt: values["crash-at"],
  killer,
  variant: values.variant === "B" ? "B" : "A",
  durability: values.durability === "one-commit" ? "one-commit" : "two-phase"
})

/** What a person says really happened to the in-doubt call (`Kernel.ReconcileOutcome`). */
const Outcome = Schema.parseJson(Schema.Union(
  Schema.Struct({ ok: Schema.Literal(true), result: Json.Json }),
  Schema.Struct({ ok: Schema.Literal(false), error: Schema.String })
))
const parseJson = (text: string): unknown => JSON.parse(text)

const program = Effect.gen(function*() {
  const kernel = yield* Kernel.Kernel
  switch (command) {
    case "execute":
      return values.workflow === "approval"
        ? yield* kernel.execute(fixture.workflows.approval, { runId, tenant, input: { amount: 250 } })
        : values.workflow === "chained"
        ? yield* kernel.execute(fixture.workflows.chained, { runId, tenant, input: { page: 0, total: 0 } })
        : yield* kernel.execute(fixture.workflows.crashy, { runId, tenant, input: { order: "o-1" } })
    case "resume":
      return yield* kernel.resume({
        tenantId: tenant.tenantId,
        runId,
        ...(values.response === undefined ? {} : { response: parseJson(values.response) })
      })
    case "reconcile": {
      const outcome = Schema.decodeUnknownSync(Outcome)(required("outcome", values.outcome))
      yield* kernel.reconcile({ tenantId: tenant.tenantId, runId, outcome })
      return yield* kernel.resume({ tenantId: tenant.tenantId, runId })
    }
    default:
      return yield* Effect.dieMessage(`unknown command ${String(command)}; expected execute, resume or reconcile`)
  }
}).pipe(Effect.provide(fixture.layer(db, { barrier: values.barrier })))

/** A typed error as JSON: its tag, its message and its fields (causes as text). */
const describeError = (error: unknown) => {
  const fields: Record<string, unknown> = {}
  if (Predicate.isObject(error)) {
    for (const [key, value] of Object.entries(error)) fields[key] = key === "cause" ? String(value) : value
  }
  return {
    ...fields,
    _tag: Predicate.hasProperty(error, "_tag") ? String(error._tag) : "unknown",
    message: error instanceof Error ? error.message : String(error)
  }
}

const exit = await Effect.runPromiseExit(program)
if (Exit.isSuccess(exit)) {
  console.log(JSON.stringify({ outcome: "result", result: exit.value }))
  process.exitCode = 0
} else {
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    console.log(JSON.stringify({ outcome: "error", error: describeError(failure.value) }))
    process.exitCode = 3
  } else {
    console.log(JSON.stringify({ outcome: "defect", cause: Cause.pretty(exit.cause) }))
    process.exitCode = 1
  }
}
