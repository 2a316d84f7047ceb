// One process's part of a crash test: `node --import tsx main.ts --db FILE --dir DIR --run ID --scenario S [--crash-at P]`.
// Prints one JSON line, {"outcome":"result","result":...} or {"outcome":"error",...}, and exits 0 (result), 3 (typed
// error) or 1 (defect). At its crash point the process dies by SIGKILL instead.
import { parseArgs } from "node:util"
import { Cause, Effect, Exit, Option } from "effect"
import { makeScenario, parseCrashPoint, parseScenario } from "./scenarios.js"

const { values } = parseArgs({
  options: {
    db: { type: "string" },
    dir: { type: "string" },
    run: { type: "string" },
    scenario: { type: "string" },
    "crash-at": { type: "string" }
  }
})

const required = (name: string, value: string | undefined): string => {
  if (value === undefined) throw new Error(`missing --${name}`)
  return value
}
const scenario = parseScenario(values.scenario)
const fixture = makeScenario({ dir: required("dir", values.dir), crash: parseCrashPoint(values["crash-at"]) })
const exit = await Effect.runPromiseExit(fixture.run(scenario, required("run", values.run)).pipe(Effect.provide(fixture.layer(required("db", values.db)))))
if (Exit.isSuccess(exit)) {
  console.log(JSON.stringify({ outcome: "result", result: exit.value }))
} else {
  const failure = Cause.failureOption(exit.cause)
  console.log(JSON.stringify(Option.isSome(failure) ? { outcome: "error", error: String(failure.value) } : { outcome: "defect", cause: Cause.pretty(exit.cause) }))
  process.exitCode = Option.isSome(failure) ? 3 : 1
}
