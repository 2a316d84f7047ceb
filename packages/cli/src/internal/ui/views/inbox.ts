/**
 * The approvals inbox: tool calls waiting for a decision and runs paused for a person. With `--allow-actions` each has
 * its forms (approve, with optionally edited arguments; reject, with the reason the model sees; respond, with a JSON
 * payload), each carrying the server's form token; read-only, the command that decides instead.
 */
import type { Approval } from "@artana/core"
import type { Inbox } from "../data.js"
import { duration, h, href, type Html, page, type PageContext, time, visible } from "./html.js"

const runLink = (ctx: PageContext, runId: string) => h`<a href="${href(`/runs/${encodeURIComponent(runId)}`, { tenant: ctx.tenant })}">${runId}</a>`

const hidden = (ctx: PageContext, fields: Readonly<Record<string, string>>) =>
  h`<input type="hidden" name="csrf" value="${ctx.csrf}"><input type="hidden" name="tenant" value="${ctx.tenant}">${
    Object.entries(fields).map(([k, v]) => h`<input type="hidden" name="${k}" value="${v}">`)
  }`

const approver = (name: string, label = "approver") => h`<label>${label} <input name="approver" value="${name}" size="10" required></label>`

const approvalActions = (ctx: PageContext, a: Approval.PendingApproval, approverName: string): Html =>
  !ctx.allowActions
    ? h`<code>artana approve ${a.approvalId}</code> · <code>artana reject ${a.approvalId} --reason TEXT</code>`
    : h`<form method="post" action="/actions/approve" class="action">${hidden(ctx, { id: a.approvalId })}
    ${approver(approverName)}
    <label>arguments <textarea name="args" rows="2" cols="40" placeholder="as requested">${""}</textarea></label>
    <button type="submit" class="approve">Approve</button></form>
  <form method="post" action="/actions/reject" class="action">${hidden(ctx, { id: a.approvalId })}
    ${approver(approverName)}
    <label>reason <input name="reason" required size="24"></label>
    <button type="submit" class="reject">Reject</button></form>`

const pauseActions = (ctx: PageContext, runId: string, responder: string): Html =>
  !ctx.allowActions
    ? h`<span class="dim">resume it from the application that runs its workflow, or start artana ui with --allow-actions</span>`
    : h`<form method="post" action="/actions/respond" class="action">${hidden(ctx, { run: runId })}
    ${approver(responder, "responder")}
    <label>response (JSON) <textarea name="response" rows="2" cols="40" required>{}</textarea></label>
    <button type="submit" class="respond">Respond</button></form>`

export const inboxView = (ctx: PageContext, inbox: Inbox, now: number, approverName: string, notice: Html | undefined): Html =>
  page(ctx, "Inbox", h`<h1>Inbox</h1>
${notice ?? ""}
<section id="approvals"><h2>Tool calls waiting for approval</h2>
${inbox.approvals.length === 0 && inbox.unreadable.length === 0 ? h`<p class="empty">No pending approvals for tenant ${ctx.tenant}.</p>` : h`<table class="approvals">
  <thead><tr><th>Run</th><th>Step</th><th>Tool</th><th>Arguments</th><th>Waiting</th><th>Approvers</th><th></th></tr></thead>
  <tbody>${inbox.approvals.map((a) => h`<tr data-approval="${a.approvalId}">
    <td>${runLink(ctx, a.runId)}</td><td>${a.stepKey}</td><td>${a.tool}</td><td><pre>${visible(a.arguments)}</pre></td>
    <td title="${time(a.requestedAt)}">${duration(Math.max(0, now - a.requestedAt))}</td><td>${a.approvers === undefined ? "anyone" : a.approvers.join(", ")}</td>
    <td>${approvalActions(ctx, a, approverName)}</td></tr>`)}${
    inbox.unreadable.map((u) => h`<tr data-unreadable="${u.runId}"><td>${runLink(ctx, u.runId)}</td><td colspan="5">its log does not verify: ${u.reason} (seq ${u.seq})</td>
    <td><span class="dim">not answerable: see its page</span></td></tr>`)
  }</tbody>
</table>`}
</section>
<section id="pauses"><h2>Runs paused for a person</h2>
${inbox.pauses.length === 0 ? h`<p class="empty">No run waits for a response.</p>` : h`<table class="pauses">
  <thead><tr><th>Run</th><th>Workflow</th><th>Reason</th><th>Ticket</th><th>Waiting</th><th></th></tr></thead>
  <tbody>${inbox.pauses.map((p) => h`<tr data-pause="${p.runId}">
    <td>${runLink(ctx, p.runId)}</td><td>${p.workflow}</td><td>${visible(p.reason)}</td><td>${p.ticket}</td>
    <td title="${time(p.at)}">${duration(Math.max(0, now - p.at))}</td><td>${p.broken === true ? h`<span class="dim">not answerable: see its page</span>` : pauseActions(ctx, p.runId, approverName)}</td></tr>`)}</tbody>
</table>`}
${inbox.more ? h`<p class="dim">More paused runs than the inbox looked at: narrow with the runs list (status paused).</p>` : ""}
</section>`)
