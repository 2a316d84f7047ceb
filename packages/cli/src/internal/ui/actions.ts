/**
 * The inbox's actions, only with `--allow-actions`: approve (optionally with edited arguments) and reject go through
 * `approvalCommands.decideAndContinue`, as `artana approve`/`reject` do (the kernel's `decideApproval`, then a plan run
 * goes on at once; a run that is no plan run is decided by the kernel served: the application's); respond resumes a run paused for a person with the response (`Kernel.resume`), which needs the run's
 * workflow: the CLI knows plan runs only, so a run of an application's workflow is answered with the kernel's error
 * and left paused. Who acts is logged with each (the approver, `HumanResponded.respondedBy`): with `approverOf`, the
 * identity the application authenticated, and a request it names nobody for acts on nothing. A decision redirects to the run's page; a refused one shows the inbox with why.
 */
import { EventStore, Json, Kernel } from "@artana/core"
import type { Context, Hono } from "hono"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import { type Choice, decideAndContinue } from "../approvalCommands.js"
import { type AppOptions, badField, failurePage, notice } from "./common.js"
import * as Data from "./data.js"
import { href, type PageContext } from "./views/html.js"
import { inboxView } from "./views/inbox.js"

interface ActionOptions extends AppOptions {
  readonly ctxOf: (c: Context) => PageContext
}

const field = (body: Record<string, unknown>, name: string): string => {
  const value = body[name]
  return typeof value === "string" ? value : ""
}

const parseJson = (what: string, text: string) =>
  Effect.suspend(() => {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (e) {
      return Effect.fail(badField(what, `not JSON (${e instanceof Error ? e.message : String(e)})`))
    }
    const json = Json.fromUnknown(parsed)
    return json.ok ? Effect.succeed(json.json) : Effect.fail(badField(what, json.error))
  })

export const actionRoutes = (app: Hono, options: ActionOptions): void => {
  const refused = (c: Context) => c.text("artana ui is read-only: start it with --allow-actions to approve, reject or respond", 403)

  /** After an action: the run's page, or the inbox with why nothing was done. */
  const answer = async <A extends { readonly runId: string }, E>(c: Context, tenant: string, effect: Effect.Effect<A, E, Kernel.Kernel | EventStore.EventStore>) => {
    const exit = await options.run(effect)
    const ctx = { ...options.ctxOf(c), tenant }
    if (Exit.isSuccess(exit)) return c.redirect(href(`/runs/${encodeURIComponent(exit.value.runId)}`, { tenant }), 303)
    const { body, message } = failurePage(ctx, exit.cause)
    const inbox = await options.run(Data.inbox(tenant))
    if (Exit.isFailure(inbox)) return c.html(body, 409)
    return c.html(inboxView(ctx, inbox.value, Date.now(), options.approver, notice(message, false)), 409)
  }

  /**
   * Who acts (decides, or responds): the identity the application authenticated when it says how to read it (a request
   * it names nobody for may not act); else the form's (typed) name. Logged with the decision or the response.
   */
  const actor = (c: Context, body: Record<string, unknown>, what: string) => {
    const name = options.approverOf === undefined ? field(body, "approver").trim() || options.approver : options.approverOf(c.req.raw)?.trim() ?? ""
    const missing = name !== "" ? undefined : options.approverOf === undefined
      ? badField("approver", `say who ${what} (it is logged)`)
      : badField("approver", `the application's approverOf names nobody for this request: only a person it identified ${what}`)
    return { name, missing }
  }

  const decide = (c: Context, choose: (body: Record<string, unknown>) => Effect.Effect<Choice, ReturnType<typeof badField>>) =>
    Effect.gen(function*() {
      const body = yield* Effect.promise(() => c.req.parseBody())
      const tenant = field(body, "tenant") || options.tenant
      const { name: approver, missing } = actor(c, body, "decides")
      const effect = Effect.gen(function*() {
        if (missing !== undefined) return yield* missing
        const choice = yield* choose(body)
        const store = Layer.succeed(EventStore.EventStore, yield* EventStore.EventStore)
        // A run that is no plan run is decided by the kernel the inspector serves: the application's (its tools check
        // an edit, its audit key hashes the decision), or `artana ui`'s own.
        const application = yield* Kernel.Kernel
        const { decided, outcome } = yield* Effect.scoped(decideAndContinue({ store, tenant, id: field(body, "id"), approver, choice, auditKey: options.auditKey, application }))
        // A run of the application's workflow goes on with the application's kernel, as `Artana.approve` does.
        if (outcome === undefined && options.resumeAfterDecision) yield* Effect.flatMap(Kernel.Kernel, (k) => k.resume({ tenantId: tenant, runId: decided.runId }))
        return { runId: outcome?.runId ?? decided.runId }
      })
      return { tenant, effect }
    })

  app.post("/actions/approve", async (c) => {
    if (!options.allowActions) return refused(c)
    const { effect, tenant } = await Effect.runPromise(decide(c, (body) => {
      const args = field(body, "args").trim()
      return args === "" ? Effect.succeed<Choice>({ decision: "approve" }) : Effect.map(parseJson("arguments", args), (json): Choice => ({ decision: "approve", arguments: json }))
    }))
    return answer(c, tenant, effect)
  })

  app.post("/actions/reject", async (c) => {
    if (!options.allowActions) return refused(c)
    const { effect, tenant } = await Effect.runPromise(decide(c, (body) => {
      const reason = field(body, "reason").trim()
      return reason === "" ? Effect.fail(badField("reason", "say why (the run's model or plan sees it)")) : Effect.succeed<Choice>({ decision: "reject", reason })
    }))
    return answer(c, tenant, effect)
  })

  app.post("/actions/respond", async (c) => {
    if (!options.allowActions) return refused(c)
    const body = await c.req.parseBody()
    const tenant = field(body, "tenant") || options.tenant
    const runId = field(body, "run")
    const { name: respondedBy, missing } = actor(c, body, "responds")
    const effect = Effect.gen(function*() {
      if (missing !== undefined) return yield* missing
      const response = yield* parseJson("response", field(body, "response"))
      const kernel = yield* Kernel.Kernel
      yield* kernel.resume({ tenantId: tenant, runId, response, respondedBy })
      return { runId }
    })
    return answer(c, tenant, effect)
  })
}
