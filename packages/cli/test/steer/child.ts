// One process's part of the steering tests, bundled by artanaBin.ts: `node CHILD --db FILE --url URL --run ID [--hold-tool]`.
// Runs (or, for a run the file already holds, continues) the agent of `agent.ts` on the SQLite file. Prints one JSON
// line, {"outcome":"result","result":...}, and exits 0 (else a defect line, exit 1).
import { parseArgs } from "node:util"
import { Cause, Effect, Exit } from "effect"
import { analyst, layer, tenant } from "./agent.js"

const { values } = parseArgs({
  options: { db: { type: "string" }, url: { type: "string" }, run: { type: "string" }, "hold-tool": { type: "boolean", default: false } }
})

const required = (name: string, value: string | undefined): string => {
  if (value === undefined) throw new Error(`missing --${name}`)
  return value
}

const hold = values["hold-tool"]
const exit = await Effect.runPromiseExit(
  analyst(hold).run({ runId: required("run", values.run), tenant, prompt: "How did Q3 go?" }).pipe(
    Effect.provide(layer(required("db", values.db), required("url", values.url), hold))
  )
)
if (Exit.isSuccess(exit)) console.log(JSON.stringify({ outcome: "result", result: exit.value }))
else {
  console.log(JSON.stringify({ outcome: "defect", cause: Cause.pretty(exit.cause) }))
  process.exitCode = 1
}
