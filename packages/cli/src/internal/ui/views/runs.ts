/** The runs list: the filter form, a page of runs, and the link to the next page (the store's cursor). */
import type { Event } from "@artana/core"
import { duration, h, href, type Html, page, type PageContext, statusBadge, time, usd } from "./html.js"

/** The filters as the form gave them (text, shown back in the form and carried into the next page's link). */
export interface RunsForm {
  readonly status: string
  readonly workflow: string
  readonly since: string
  readonly until: string
  readonly minCost: string
  readonly limit: number
}

const STATUSES = ["running", "paused", "completed", "failed", "needs_reconciliation", "continued"] as const

const filterForm = (ctx: PageContext, form: RunsForm): Html =>
  h`<form class="filters" method="get" action="/">
  <label>tenant <input name="tenant" value="${ctx.tenant}" size="12"></label>
  <label>status <select name="status">
    <option value="">any</option>
    ${STATUSES.map((s) => h`<option value="${s}"${s === form.status ? h` selected` : ""}>${s}</option>`)}
  </select></label>
  <label>workflow <input name="workflow" value="${form.workflow}" size="14"></label>
  <label title="an ISO date or time, ms since the epoch, or an age (90m, 24h, 7d)">since <input name="since" value="${form.since}" size="12" placeholder="24h"></label>
  <label>until <input name="until" value="${form.until}" size="12" placeholder="2026-11-01"></label>
  <label>min cost $ <input name="minCost" value="${form.minCost}" size="6" placeholder="0.01"></label>
  <button type="submit">Filter</button>
</form>`

const row = (ctx: PageContext, r: Event.RunInfo): Html =>
  h`<tr data-run="${r.runId}">
  <td><a class="run-link" href="${href(`/runs/${encodeURIComponent(r.runId)}`, { tenant: ctx.tenant })}">${r.runId}</a></td>
  <td>${r.workflow}</td>
  <td>${statusBadge(r.status)}</td>
  <td class="num">${r.headSeq}</td>
  <td class="num">${usd(r.costUsd)}</td>
  <td>${time(r.createdAt)}</td>
  <td class="num">${duration(r.updatedAt - r.createdAt)}</td>
  <td>${r.parentRunId === undefined ? "" : h`<a href="${href(`/runs/${encodeURIComponent(r.parentRunId)}`, { tenant: ctx.tenant })}">${r.parentRunId}</a>`}</td>
</tr>`

/** The runs page. `next` is the cursor of the page after this one. */
export const runsView = (
  ctx: PageContext,
  form: RunsForm,
  runs: ReadonlyArray<Event.RunInfo>,
  next: string | undefined,
  paged: boolean
): Html => {
  const nextHref = next === undefined ? undefined : href("/", {
    tenant: ctx.tenant,
    status: form.status,
    workflow: form.workflow,
    since: form.since,
    until: form.until,
    minCost: form.minCost,
    limit: form.limit === 50 ? undefined : form.limit,
    after: next
  })
  const table = runs.length === 0
    ? h`<p class="empty">No ${paged ? "more " : ""}runs for tenant ${ctx.tenant} with these filters.</p>`
    : h`<table class="runs">
  <thead><tr><th>Run</th><th>Workflow</th><th>Status</th><th>Events</th><th>Cost</th><th>Created</th><th>Took</th><th>Parent</th></tr></thead>
  <tbody>${runs.map((r) => row(ctx, r))}</tbody>
</table>`
  return page(ctx, "Runs", h`<h1>Runs</h1>
${filterForm(ctx, form)}
${table}
<p class="pager">${runs.length} run${runs.length === 1 ? "" : "s"}, newest first${paged ? ", after the cursor" : ""}.
${nextHref === undefined ? "" : h` <a class="next" rel="next" href="${nextHref}">Next page →</a>`}
${paged ? h` <a href="${href("/", { tenant: ctx.tenant })}">First page</a>` : ""}</p>`)
}
