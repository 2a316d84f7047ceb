// Sends one signal to a run from its own process and prints the receipt (or the error's tag) as JSON.
import { Effect, Either } from "effect"
import { Kernel } from "@artana/core"
import { live, tenant } from "./shared.js"

const [filename = "", runId = "", payload = "null"] = process.argv.slice(2)

const sent = await Effect.runPromise(
  Effect.flatMap(Kernel.Kernel, (k) => Effect.either(k.signal({ tenantId: tenant.tenantId, runId, name: "decision", payload: JSON.parse(payload) }))).pipe(
    Effect.provide(live(filename))
  )
)
console.log(JSON.stringify(Either.isRight(sent) ? { ok: sent.right } : { error: sent.left._tag }))
