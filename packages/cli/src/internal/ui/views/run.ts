/**
 * A run's page: its header (status, cost, took), the chain badge (filled in by the page's script from `/chain`: the
 * chain is checked in one pass over the whole log, which the page itself never reads), where a resume diverged, the
 * lineage tree with each subtree's spend, the steps of the shown stretch (tokens, USD, duration) and its timeline.
 */
import type { Event } from "@artana/core"
import { describeEvent } from "../../readCommands.js"
import { type ChainStatus, type Divergence, FORKS_LIMIT, type LineageNode, type StepSummary } from "../data.js"
import { duration, h, href, type Html, page, type PageContext, statusBadge, time, usd, visible } from "./html.js"

const runHref = (ctx: PageContext, runId: string, query: Readonly<Record<string, string | number | undefined>> = {}) =>
  href(`/runs/${encodeURIComponent(runId)}`, { tenant: ctx.tenant, ...query })

/** The kind of an event, for its row's colour: a denial, a model or tool step, a note of a middleware. */
const kindOf = (e: Event.Event): string => {
  switch (e.payload._tag) {
    case "PolicyDenied":
    case "BudgetExceeded":
    case "ToolFailed":
    case "ModelFailed":
    case "RunFailed":
      return "bad"
    case "ModelRequested":
    case "ModelCompleted":
      return "model"
    case "ToolRequested":
    case "ToolCompleted":
      return "tool"
    case "MiddlewareNote":
      return "note"
    case "ApprovalRequested":
    case "ApprovalDecided":
    case "PauseRequested":
    case "HumanResponded":
      return "person"
    default:
      return "other"
  }
}

/** One event of the timeline: its line, and the whole payload (the model request as sent, the tool's result) below. */
export const eventRow = (startedAt: number, e: Event.Event): Html =>
  h`<tr class="event kind-${kindOf(e)}" id="seq-${e.seq}" data-seq="${e.seq}">
  <td class="num">${e.seq}</td>
  <td class="num">+${duration(Math.max(0, e.timestamp - startedAt))}</td>
  <td>${e.stepKey}</td>
  <td class="type">${e.type}</td>
  <td><details><summary>${visible(describeEvent(e.payload))}</summary><pre>${visible(JSON.stringify(e.payload, null, 2))}</pre></details></td>
</tr>`

const lineageTree = (ctx: PageContext, node: LineageNode, current: string): Html => {
  const label = h`<a href="${runHref(ctx, node.run.runId)}"${node.run.runId === current ? h` class="current" aria-current="page"` : ""}>${node.run.runId}</a>
    <span class="dim">${node.run.workflow}</span> ${statusBadge(node.run.status)}
    <span class="spend" title="this run / its subtree">${usd(node.run.costUsd)} · subtree ${usd(node.subtreeCostUsd)}</span>`
  return h`<li data-run="${node.run.runId}">${label}
  ${node.children.length === 0 ? "" : h`<ul>${node.children.map((c) => lineageTree(ctx, c, current))}</ul>`}
  </li>${node.continuedAs === undefined ? "" : h`<li class="continued">continued as → <ul class="successor">${lineageTree(ctx, node.continuedAs, current)}</ul></li>`}`
}

/** The fork's origin, drawn above its tree: the run it was copied from (a link), the seq, the steps it replaced. */
const forkedFromLine = (ctx: PageContext, from: Event.ForkedFrom): Html =>
  h`<p class="forked" id="forked-from">⑂ forked from <a href="${runHref(ctx, from.runId)}">${from.runId}</a> at seq ${from.seq}${
    from.overridden === undefined || from.overridden.length === 0 ? "" : h` <span class="dim">(replaced: ${from.overridden.join(", ")})</span>`
  }</p>`

/** The run's forks, each the root of a lineage of its own: a link, its status and what it spent. */
const forksList = (ctx: PageContext, forks: ReadonlyArray<Event.RunInfo>): Html =>
  forks.length === 0 ? h`` : h`<div id="forks"><p>⑂ forks of this run${forks.length > FORKS_LIMIT ? h` (the newest ${FORKS_LIMIT})` : ""}:</p>
<ul class="tree">${forks.slice(0, FORKS_LIMIT).map((f) => h`<li data-run="${f.runId}"><a href="${runHref(ctx, f.runId)}">${f.runId}</a> ${statusBadge(f.status)} <span class="spend">${usd(f.costUsd)}</span></li>`)}</ul></div>`

const stepsTable = (steps: ReadonlyArray<StepSummary>, startedAt: number): Html =>
  h`<table class="steps">
  <thead><tr><th>Step</th><th>Events</th><th>Tokens in</th><th>Tokens out</th><th>USD</th><th>Started</th><th>Took</th></tr></thead>
  <tbody>${steps.map((s) => h`<tr data-step="${s.stepKey}">
    <td>${s.stepKey}</td><td>${s.kinds.join(", ")}</td><td class="num">${s.inputTokens}</td><td class="num">${s.outputTokens}</td>
    <td class="num">${usd(s.costUsd)}</td><td class="num">+${duration(Math.max(0, s.startedAt - startedAt))}</td><td class="num">${duration(s.durationMs)}</td>
  </tr>`)}</tbody>
</table>`

/** The stretch of the log shown, and the links to the others. */
export interface Stretch {
  readonly fromSeq: number
  readonly limit: number
}

const pager = (ctx: PageContext, info: Event.RunInfo, at: Stretch, shown: number): Html => {
  const link = (label: string, fromSeq: number) => h`<a href="${runHref(ctx, info.runId, { from: fromSeq, limit: at.limit })}#events">${label}</a>`
  const last = Math.max(1, info.headSeq - at.limit + 1)
  return h`<p class="pager">events ${shown === 0 ? "none" : `${at.fromSeq}–${at.fromSeq + shown - 1}`} of ${info.headSeq}
  ${at.fromSeq > 1 ? h`${link("« first", 1)} ${link("‹ previous", Math.max(1, at.fromSeq - at.limit))}` : ""}
  ${at.fromSeq + at.limit <= info.headSeq ? h`${link("next ›", at.fromSeq + at.limit)} ${link("last »", last)}` : ""}</p>`
}

export interface RunView {
  readonly info: Event.RunInfo
  readonly lineage: {
    readonly tree: LineageNode | undefined
    readonly truncated: boolean
    readonly runs: number
    /** Set when the lineage's root is a fork (`Kernel.fork`): the run and seq it was copied from. */
    readonly forkedFrom?: Event.ForkedFrom | undefined
  }
  /** The run's own forks, newest first (one more than are drawn: the page says when there are more). */
  readonly forks: ReadonlyArray<Event.RunInfo>
  readonly lineageCostUsd: number
  readonly divergence: Divergence | undefined
  readonly events: ReadonlyArray<Event.Event>
  /** The steps of the events shown (a step cut by the stretch's edge counts the part shown). */
  readonly steps: ReadonlyArray<StepSummary>
  readonly stretch: Stretch
}

export const runView = (ctx: PageContext, v: RunView): Html => {
  const { info } = v
  const live = (info.status === "running" || info.status === "paused") && v.stretch.fromSeq + v.stretch.limit > info.headSeq
  const lastShown = v.events[v.events.length - 1]?.seq ?? v.stretch.fromSeq - 1
  const steps = stepsTable(v.steps, info.createdAt)
  return page(ctx, `Run ${info.runId}`, h`<h1>Run <span class="run-id">${info.runId}</span> ${statusBadge(info.status)}</h1>
<div id="chain" class="chain pending" data-src="${href(`/runs/${encodeURIComponent(info.runId)}/chain`, { tenant: ctx.tenant })}">checking the hash chain… <a href="${href(`/runs/${encodeURIComponent(info.runId)}/chain`, { tenant: ctx.tenant })}">(open)</a></div>
<dl class="facts">
  <dt>workflow</dt><dd>${info.workflow}</dd>
  <dt>tenant</dt><dd>${info.tenantId}</dd>
  <dt>created</dt><dd>${time(info.createdAt)}</dd>
  <dt>took</dt><dd>${duration(info.updatedAt - info.createdAt)}</dd>
  <dt>events</dt><dd>${info.headSeq}</dd>
  <dt>cost</dt><dd><span id="run-cost">${usd(info.costUsd)}</span> this run · <span id="lineage-cost">${usd(v.lineageCostUsd)}</span> its lineage (charged to the root's budget)</dd>
  ${info.parentRunId === undefined ? "" : h`<dt>parent</dt><dd><a href="${runHref(ctx, info.parentRunId)}">${info.parentRunId}</a></dd>`}
</dl>
${v.divergence === undefined ? "" : h`<section class="divergence" id="divergence"><h2>Replay diverged</h2>
  <p>At step <b>${v.divergence.stepKey}</b> (the run failed at seq ${v.divergence.seq}): the code did not ask for what the log holds.</p>
  <table class="diff"><tr><th>the log holds</th><td><pre>${visible(v.divergence.expected)}</pre></td></tr><tr><th>the code asked for</th><td><pre>${visible(v.divergence.actual)}</pre></td></tr></table></section>`}
<section id="lineage"><h2>Lineage</h2>
${v.lineage.forkedFrom === undefined ? "" : forkedFromLine(ctx, v.lineage.forkedFrom)}
${v.lineage.tree === undefined ? h`<p class="dim">The lineage's root is not in this tenant's store.</p>` : h`<ul class="tree">${lineageTree(ctx, v.lineage.tree, info.runId)}</ul>`}
${v.lineage.truncated ? h`<p class="dim">Only the first ${v.lineage.runs} runs of the lineage are drawn.</p>` : ""}
${forksList(ctx, v.forks)}
</section>
<section id="steps"><h2>Steps of the events shown</h2>${steps}</section>
<section id="events"><h2>Timeline</h2>
${pager(ctx, info, v.stretch, v.events.length)}
<pre id="streaming" class="streaming" hidden></pre>
<table class="timeline"${live ? h` data-live="${href(`/runs/${encodeURIComponent(info.runId)}/live`, { tenant: ctx.tenant, after: lastShown })}"` : ""}>
  <thead><tr><th>Seq</th><th>At</th><th>Step</th><th>Event</th><th>Detail</th></tr></thead>
  <tbody id="timeline">${v.events.map((e) => eventRow(info.createdAt, e))}</tbody>
</table>
${pager(ctx, info, v.stretch, v.events.length)}
</section>`)
}

/** The chain badge and the run's totals, as `/chain` serves them into the page. */
export const chainView = (ctx: PageContext, runId: string, c: ChainStatus, headSeq: number, limit: number): Html => {
  const totals = h`<span class="totals">${c.modelCalls} model calls · ${c.inputTokens} tokens in · ${c.outputTokens} tokens out${c.report.ok ? "" : h` (in the ${c.counted} events before the break)`}</span>`
  if (c.report.ok) {
    return h`<span class="badge chain-ok" data-chain="ok">✓ chain verified</span> ${c.report.events} events, head seq ${headSeq}. ${totals}`
  }
  const seq = c.report.firstBrokenSeq
  const at = seq === undefined ? "" : h` <a href="${runHref(ctx, runId, { from: Math.max(1, seq - Math.floor(limit / 2)), limit })}#seq-${seq}">show seq ${seq}</a>`
  return h`<span class="badge chain-broken" data-chain="broken" data-broken-seq="${seq ?? ""}">✗ TAMPERED: hash chain broken at seq ${seq ?? "?"}</span>
  <span class="reason">${c.report.reason ?? ""}</span>. What is shown is what the store holds now, not what ran.${at} ${totals}`
}
