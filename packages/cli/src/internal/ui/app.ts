/**
 * The inspector's routes, on Hono: pages are rendered on the server (views/), effects run on the store's services
 * (`Run`). Security (`guard.ts`) wraps every route; the actions are refused unless the server allows them.
 */
import { EventStore } from "@artana/core"
import { Hono } from "hono"
import { bodyLimit } from "hono/body-limit"
import { secureHeaders } from "hono/secure-headers"
import type { Context } from "hono"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { parseTime } from "../readCommands.js"
import * as Assets from "./assets.js"
import * as Data from "./data.js"
import { type AppOptions, failurePage } from "./common.js"
import { guard } from "./guard.js"
import { liveRoute } from "./live.js"
import type { UiServices } from "./run.js"
import { actionRoutes } from "./actions.js"
import { type Html, type PageContext, problem } from "./views/html.js"
import { inboxView } from "./views/inbox.js"
import { chainView, runView } from "./views/run.js"
import { type RunsForm, runsView } from "./views/runs.js"

/** Events shown per page of a run unless `limit` says otherwise, and the most one page shows. */
export const EVENTS_PER_PAGE = 200
export const MAX_EVENTS_PER_PAGE = 1000

const int = (text: string | undefined, fallback: number, max: number): number => {
  const n = text === undefined ? Number.NaN : Number(text)
  return Number.isSafeInteger(n) && n >= 1 ? Math.min(n, max) : fallback
}

export const makeApp = (options: AppOptions): Hono => {
  const app = new Hono()
  // Every response, refusals included: never in another site's frame (a page elsewhere would frame the inbox and have
  // a person click Approve: the click is the inspector's own form, token and Origin right), scripts and styles only
  // the inspector's own, no sniffing, no referrer. Hono's own middleware (`hono/secure-headers`).
  app.use("*", secureHeaders({
    xFrameOptions: "DENY",
    contentSecurityPolicy: { defaultSrc: ["'self'"], frameAncestors: ["'none'"], objectSrc: ["'none'"], baseUri: ["'none'"], formAction: ["'self'"] },
    referrerPolicy: "same-origin",
    crossOriginResourcePolicy: "same-origin"
  }))
  // Pages hold the forms' token and runs' payloads: kept by no cache (the assets say their own).
  app.use("*", async (c, next) => {
    await next()
    if (!c.res.headers.has("cache-control")) c.res.headers.set("cache-control", "no-store")
  })
  // An action's form is small: a body past 1 MiB is refused before anything reads it (413).
  app.use("*", bodyLimit({ maxSize: 1024 * 1024, onError: (c) => c.text("artana ui: the request's body is over 1 MiB", 413) }))
  app.use("*", guard(options.guard))
  const tenants = options.tenants
  if (tenants !== undefined) {
    // A tenant the inspector does not serve is refused, whether a page asks for it or an action names it, or a request
    // naming none falls back to it (the default `tenant`, when it is not one of `tenants`).
    app.use("*", async (c, next) => {
      const body = c.req.method === "POST" ? await c.req.parseBody() : {}
      const named = [c.req.query("tenant"), typeof body["tenant"] === "string" ? body["tenant"] : undefined].filter((t) => t !== undefined && t !== "")
      const other = (named.length === 0 ? [options.tenant] : named).find((t) => !tenants.has(t!))
      if (other !== undefined) return c.text(`this inspector serves the tenant${tenants.size === 1 ? "" : "s"} ${[...tenants].join(", ")}, not "${other}"`, 403)
      await next()
      return undefined
    })
  }
  const ctxOf = (c: Context): PageContext => ({
    tenant: c.req.query("tenant") || options.tenant,
    csrf: options.guard.csrf,
    allowActions: options.allowActions,
    store: options.store
  })
  const render = async <A, E>(c: Context, effect: Effect.Effect<A, E, UiServices>, view: (a: A) => Html) => {
    const exit = await options.run(effect)
    if (Exit.isSuccess(exit)) return c.html(view(exit.value))
    const { body, status } = failurePage(ctxOf(c), exit.cause)
    return c.html(body, status)
  }

  app.get("/assets/ui.js", (c) => c.body(Assets.script, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "no-cache" }))
  app.get("/assets/ui.css", (c) => c.body(Assets.stylesheet, 200, { "content-type": "text/css; charset=utf-8", "cache-control": "no-cache" }))

  app.get("/", (c) => {
    const ctx = ctxOf(c)
    const q = (name: string) => c.req.query(name) ?? ""
    const form: RunsForm = { status: q("status"), workflow: q("workflow"), since: q("since"), until: q("until"), minCost: q("minCost"), limit: int(c.req.query("limit"), 50, 500) }
    const after = c.req.query("after") || undefined
    const effect = Effect.gen(function*() {
      const now = Date.now()
      const status = form.status === "" ? undefined : yield* Data.parseStatus(form.status)
      const createdSince = form.since === "" ? undefined : yield* parseTime("since", form.since, now)
      const createdUntil = form.until === "" ? undefined : yield* parseTime("until", form.until, now)
      const minCostUsd = form.minCost === "" ? undefined : yield* Data.parseCost(form.minCost)
      const workflow = form.workflow === "" ? undefined : form.workflow
      return yield* Data.runsPage(ctx.tenant, { status, workflow, createdSince, createdUntil, minCostUsd, after, limit: form.limit })
    })
    return render(c, effect, (page) => runsView(ctx, form, page.runs, page.next, after !== undefined))
  })

  app.get("/runs/:id", (c) => {
    const ctx = ctxOf(c)
    const runId = c.req.param("id")
    const stretch = { fromSeq: int(c.req.query("from"), 1, Number.MAX_SAFE_INTEGER), limit: int(c.req.query("limit"), EVENTS_PER_PAGE, MAX_EVENTS_PER_PAGE) }
    const effect = Effect.gen(function*() {
      const store = yield* EventStore.EventStore
      const info = yield* store.getRun(ctx.tenant, runId)
      const [lineage, forks, lineageCostUsd, divergence, events] = yield* Effect.all([
        Data.lineage(ctx.tenant, info.rootRunId),
        Data.forksOf(ctx.tenant, runId),
        store.lineageCostUsd(ctx.tenant, info.rootRunId),
        Data.divergence(ctx.tenant, info),
        Data.eventsPage(ctx.tenant, runId, stretch.fromSeq, stretch.limit)
      ])
      return { info, lineage, forks, lineageCostUsd, divergence, events, steps: Data.stepsOf(events), stretch }
    })
    return render(c, effect, (v) => runView(ctx, v))
  })

  app.get("/runs/:id/chain", (c) => {
    const ctx = ctxOf(c)
    const runId = c.req.param("id")
    const effect = Effect.gen(function*() {
      const info = yield* Effect.flatMap(EventStore.EventStore, (store) => store.getRun(ctx.tenant, runId))
      return { info, chain: yield* Data.chain(ctx.tenant, runId, options.auditKey) }
    })
    return render(c, effect, ({ chain, info }) => chainView(ctx, runId, chain, info.headSeq, EVENTS_PER_PAGE))
  })

  app.get("/runs/:id/live", (c) => liveRoute(c, options.run, ctxOf(c).tenant, c.req.param("id")))

  app.get("/inbox", (c) => {
    const ctx = ctxOf(c)
    return render(c, Data.inbox(ctx.tenant), (inbox) => inboxView(ctx, inbox, Date.now(), options.approver, undefined))
  })

  actionRoutes(app, { ...options, ctxOf })

  app.notFound((c) => c.html(problem(ctxOf(c), "Not found", `Nothing is served at ${c.req.path}.`), 404))
  app.onError((error, c) => c.html(problem(ctxOf(c), "Internal error", error.message), 500))
  return app
}
