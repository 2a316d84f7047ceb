/**
 * Compile-time test of `Register` (`pnpm check` builds this project on its own, so the augmentation below types only
 * this program): once an application declares its workflows, what it does by a workflow's name is typed by them.
 * Without the declaration (every other program of the repo) the by-name calls stay `unknown`.
 */
import { Artana, type Kernel, Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

class Declined extends Schema.TaggedError<Declined>()("Declined", { limit: Schema.Number }) {}
class Missing extends Schema.TaggedError<Missing>()("Missing", { sku: Schema.String }) {}

export const pay = Workflow.make({
  name: "pay",
  input: Schema.Number,
  output: Schema.Struct({ paid: Schema.Number }),
  error: Declined,
  run: (amount) => (amount > 100 ? Effect.fail(new Declined({ limit: 100 })) : Effect.succeed({ paid: amount }))
})

export const ship = Workflow.make({
  name: "ship",
  input: Schema.String,
  output: Schema.String,
  error: Missing,
  run: (sku) => Effect.succeed(`shipped ${sku}`)
})

declare module "@artana/core" {
  interface Register {
    readonly workflows: typeof pay | typeof ship
  }
}

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
type Output<R> = Extract<R, { readonly status: "completed" }> extends { readonly output: infer O } ? O : never

const byName = Artana.resume({ tenantId: "acme", runId: "r-1" })
export const output: Equals<Output<Effect.Effect.Success<typeof byName>>, { readonly paid: number } | string> = true
export const error: Equals<Effect.Effect.Error<typeof byName>, Declined | Missing | Kernel.KernelError> = true

// The declared errors are tagged members of the channel, so a caller handles them by tag.
export const handled: Effect.Effect<string, Exclude<Kernel.KernelError, { readonly _tag: "RunNotFound" }>, Kernel.Kernel> = byName.pipe(
  Effect.map((r) => (r.status !== "completed" ? r.status : typeof r.output === "string" ? r.output : `paid ${r.output.paid}`)),
  Effect.catchTags({
    Declined: (e) => Effect.succeed(`declined over ${e.limit}`),
    Missing: (e) => Effect.succeed(`no ${e.sku}`),
    RunNotFound: () => Effect.succeed("no such run")
  })
)

// Given the workflow, the call stays typed by that one workflow, not by the registered union.
export const typed = Artana.resume({ tenantId: "acme", runId: "r-1", workflow: ship })
export const typedError: Equals<Effect.Effect.Error<typeof typed>, Missing | Kernel.KernelError> = true

// approve, reject and fork by name, and the Promise client's resume, are typed the same way.
export const approved = Artana.approve({ tenantId: "acme", approvalId: "a-1", approver: "ops" })
export const approveOutput: Equals<Output<Effect.Effect.Success<typeof approved>>, { readonly paid: number } | string> = true
export const forkError: Equals<
  Extract<Effect.Effect.Error<ReturnType<typeof Artana.fork>>, Declined | Missing>,
  Declined | Missing
> = true
export const clientResume = (client: Artana.Client): Promise<{ readonly paid: number } | string | undefined> =>
  client.resume({ tenantId: "acme", runId: "r-1" }).then((r) => (r.status === "completed" ? r.output : undefined))
