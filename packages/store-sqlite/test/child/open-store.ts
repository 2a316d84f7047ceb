// Opens a SQLite store and reports how that went, for the permission tests that must run as an unprivileged
// user (root bypasses file permissions): `node --import tsx open-store.ts FILENAME [--read-only]`, started from
// the repo root. Prints one JSON line: {"outcome":"opened","runs":[tenant acme's run ids]},
// {"outcome":"error","error":{"_tag","message",...}} for a typed failure, or {"outcome":"defect","cause":...}.
import { EventStore } from "@artana/core"
import { Cause, Context, Effect, Exit, Layer, Option } from "effect"
import { SqliteStore } from "../../src/index.js"

const filename = process.argv[2]
if (filename === undefined) throw new Error("usage: open-store.ts FILENAME [--read-only]")
const readOnly = process.argv.includes("--read-only")

const exit = await Effect.runPromiseExit(Effect.scoped(Effect.gen(function*() {
  const store = Context.get(yield* Layer.build(SqliteStore.layer({ filename, readOnly })), EventStore.EventStore)
  return (yield* store.listRuns("acme")).map((run) => run.runId)
})))

const output = Exit.match(exit, {
  onSuccess: (runs) => ({ outcome: "opened" as const, runs }),
  onFailure: (cause) =>
    Option.match(Cause.failureOption(cause), {
      onNone: () => ({ outcome: "defect" as const, cause: Cause.pretty(cause) }),
      onSome: (error) => ({
        outcome: "error" as const,
        error: error._tag === "StoreUnavailable"
          ? { _tag: error._tag, message: error.message, store: error.store, location: error.location, reason: error.reason }
          : { _tag: error._tag, message: error.message, reason: error.reason }
      })
    })
})
process.stdout.write(`${JSON.stringify(output)}\n`)
