// Opens a SQLite store and reports how that went, for the permission tests that must run as an unprivileged
// user (root bypasses file permissions): `node --import tsx open-store.ts FILENAME`, started from the repo
// root. Prints one JSON line: {"outcome":"opened"}, {"outcome":"error","error":{"_tag","message",...}} for a
// typed failure, or {"outcome":"defect","cause":...}.
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { SqliteStore } from "../../src/index.js"

const filename = process.argv[2]
if (filename === undefined) throw new Error("usage: open-store.ts FILENAME")

const exit = await Effect.runPromiseExit(Effect.scoped(Layer.build(SqliteStore.layer({ filename }))))

const output = Exit.match(exit, {
  onSuccess: () => ({ outcome: "opened" as const }),
  onFailure: (cause) =>
    Option.match(Cause.failureOption(cause), {
      onNone: () => ({ outcome: "defect" as const, cause: Cause.pretty(cause) }),
      onSome: (error) => ({
        outcome: "error" as const,
        error: { _tag: error._tag, message: error.message, store: error.store, location: error.location, reason: error.reason }
      })
    })
})
process.stdout.write(`${JSON.stringify(output)}\n`)
