// `Inspector.serve` over an application's own kernel (its workflows and tools, a SQLite file), over HTTP: the inbox's
// respond resumes a run paused for a person with the application's workflow, and an approved tool call's run goes on
// at once (`resumeAfterDecision`), as `Artana.approve` does. The forms' token is read from the inbox page as a browser
// would post it.
import { EventStore, Kernel, Middleware, Tenant, Tool, ToolRegistry, Workflow } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { Inspector } from "@artana/cli"
import { SqliteStore } from "@artana/store-sqlite"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema } from "effect"
import { SqlClient } from "@effect/sql"
import * as path from "node:path"
import { cleanup, tempDir } from "./helpers.js"

afterAll(cleanup)

const acme = Tenant.TenantContext.make({ tenantId: "acme", capabilities: [], budgetUsdLimit: 0 })

const sent: Array<string> = []
const send = Tool.make({
  name: "send",
  description: "Sends a message",
  parameters: Schema.Struct({ to: Schema.String }),
  needsApproval: () => Effect.succeed(true),
  handler: ({ to }) => Effect.sync(() => {
    sent.push(to)
    return `sent to ${to}`
  })
})

const review = Workflow.make({
  name: "review",
  input: Schema.Struct({ doc: Schema.String }),
  output: Schema.Struct({ signed: Schema.Boolean }),
  run: ({ doc }, ctx) => ctx.pauseForHuman({ reason: `sign off ${doc}`, schema: Schema.Struct({ signed: Schema.Boolean }) })
})

const notify = Workflow.make({
  name: "notify",
  input: Schema.Struct({ to: Schema.String }),
  output: Schema.String,
  run: ({ to }, ctx) => ctx.tool(send, { to })
})

/** A payout only alice may approve. */
const pay = Tool.make({
  name: "pay",
  description: "Pays someone",
  parameters: Schema.Struct({ to: Schema.String }),
  needsApproval: () => Effect.succeed(true),
  approvers: ["alice"],
  handler: ({ to }) => Effect.sync(() => {
    sent.push(to)
    return `paid ${to}`
  })
})

const payout = Workflow.make({
  name: "payout",
  input: Schema.Struct({ to: Schema.String }),
  output: Schema.String,
  run: ({ to }, ctx) => ctx.tool(pay, { to })
})

const appLayer = (filename: string) =>
  Layer.provideMerge(
    Kernel.layer({ workflows: [review, notify] }),
    Layer.mergeAll(SqliteStore.layer({ filename }), ScriptedModel.layer([]), ToolRegistry.layer([send]), Middleware.layer([]))
  )

const form = { "content-type": "application/x-www-form-urlencoded" }

/** Served for acme's people, each identified by the application's proxy in a header. */
const servedToIdentifiedPeople = Inspector.serve({
  tenant: "acme",
  tenants: ["acme"],
  port: 0,
  allowActions: true,
  resumeAfterDecision: true,
  approverOf: (request) => request.headers.get("x-authenticated-user") ?? undefined
})

const post = (url: string, fields: Record<string, string>) =>
  Effect.promise(() => fetch(url, { method: "POST", headers: form, body: new URLSearchParams(fields), redirect: "manual" }))

describe("Inspector.serve over an application's kernel", () => {
  it.live("respond resumes a run paused for a person; an approved call's run goes on at once", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      const paused = yield* kernel.execute(review, { runId: "review-1", tenant: acme, input: { doc: "Q3" } })
      expect(paused.status).toBe("paused")
      const waiting = yield* kernel.execute(notify, { runId: "notify-1", tenant: acme, input: { to: "bob@example.com" } })
      expect(waiting.status).toBe("paused")

      const server = yield* Inspector.serve({ tenant: "acme", port: 0, allowActions: true, approver: "ops", resumeAfterDecision: true })
      const inbox = yield* Effect.promise(() => fetch(`${server.url}inbox`).then((r) => r.text()))
      expect(inbox).toContain("sign off Q3")
      expect(inbox).toContain("data-approval=\"notify-1@")
      const csrf = /name="csrf" value="([^"]+)"/.exec(inbox)![1]!
      const approvalId = /data-approval="([^"]+)"/.exec(inbox)![1]!

      const responded = yield* post(`${server.url}actions/respond`, { csrf, tenant: "acme", run: "review-1", response: "{\"signed\":true}" })
      expect(responded.status).toBe(303)
      expect(responded.headers.get("location")).toBe("/runs/review-1?tenant=acme")
      const store = yield* EventStore.EventStore
      expect((yield* store.getRun("acme", "review-1")).status).toBe("completed")
      const [end] = yield* store.readEvents("acme", "review-1", (yield* store.getRun("acme", "review-1")).headSeq, 1)
      expect(end?.payload).toEqual({ _tag: "RunCompleted", output: { signed: true } })
      // Who responded is logged with the response: here the inspector's default person, as a decision logs it.
      const responses = (yield* store.readEvents("acme", "review-1")).filter((e) => e.payload._tag === "HumanResponded")
      expect(responses.map((e) => e.payload)).toMatchObject([{ payload: { signed: true }, respondedBy: "ops" }])

      const approved = yield* post(`${server.url}actions/approve`, { csrf, tenant: "acme", id: approvalId, approver: "ops", args: "" })
      expect(approved.status).toBe(303)
      expect((yield* store.getRun("acme", "notify-1")).status).toBe("completed")
      expect(sent).toEqual(["bob@example.com"])
      const page = yield* Effect.promise(() => fetch(`${server.url}runs/notify-1?tenant=acme`).then((r) => r.text()))
      expect(page).toContain("data-status=\"completed\"")
      expect(page).toContain("ApprovalDecided")
    }).pipe(Effect.provide(appLayer(path.join(tempDir(), "app.db"))), Effect.scoped))

  it.live("an approval with edited arguments is decided by the application's kernel: its tool checks the edit, its audit key hashes it", () =>
    Effect.gen(function*() {
      sent.length = 0
      const kernel = yield* Kernel.Kernel
      expect((yield* kernel.execute(notify, { runId: "notify-k", tenant: acme, input: { to: "dave" } })).status).toBe("paused")
      // Served without the application's audit key: the decision is the application's kernel's to hash.
      const server = yield* Inspector.serve({ tenant: "acme", port: 0, allowActions: true, approver: "ops", resumeAfterDecision: true })
      const inbox = yield* Effect.promise(() => fetch(`${server.url}inbox`).then((r) => r.text()))
      const csrf = /name="csrf" value="([^"]+)"/.exec(inbox)![1]!
      const approvalId = /data-approval="(notify-k@[^"]+)"/.exec(inbox)![1]!
      const badEdit = yield* post(`${server.url}actions/approve`, { csrf, tenant: "acme", id: approvalId, approver: "ops", args: "{\"to\":5}" })
      expect(badEdit.status).toBe(409)
      const approved = yield* post(`${server.url}actions/approve`, { csrf, tenant: "acme", id: approvalId, approver: "ops", args: "{\"to\":\"dave-edited\"}" })
      expect(approved.status).toBe(303)
      expect(sent).toEqual(["dave-edited"])
      expect((yield* kernel.verify({ tenantId: "acme", runId: "notify-k" })).ok).toBe(true)
    }).pipe(Effect.provide(Layer.provideMerge(
      Kernel.layer({ workflows: [notify], auditKey: Redacted.make("app-hmac-key") }),
      Layer.mergeAll(SqliteStore.layer({ filename: path.join(tempDir(), "keyed.db") }), ScriptedModel.layer([]), ToolRegistry.layer([send]), Middleware.layer([]))
    )), Effect.scoped), 60_000)

  it.live("served for one tenant and one authenticated approver: another tenant is refused, the form's approver is not who decides", () =>
    Effect.gen(function*() {
      sent.length = 0
      const kernel = yield* Kernel.Kernel
      const globex = Tenant.TenantContext.make({ tenantId: "globex", capabilities: [], budgetUsdLimit: 0 })
      expect((yield* kernel.execute(payout, { runId: "payout-g", tenant: globex, input: { to: "eve" } })).status).toBe("paused")
      expect((yield* kernel.execute(payout, { runId: "payout-a", tenant: acme, input: { to: "carol" } })).status).toBe("paused")
      // The application's proxy authenticates people and names them in a header.
      const server = yield* servedToIdentifiedPeople
      const as = (user: string) => ({ "x-authenticated-user": user })
      expect((yield* Effect.promise(() => fetch(`${server.url}?tenant=globex`, { headers: as("alice") }))).status).toBe(403)
      expect((yield* Effect.promise(() => fetch(`${server.url}runs/payout-g?tenant=globex`, { headers: as("alice") }))).status).toBe(403)
      const inbox = yield* Effect.promise(() => fetch(`${server.url}inbox`, { headers: as("alice") }).then((r) => r.text()))
      const csrf = /name="csrf" value="([^"]+)"/.exec(inbox)![1]!
      const approvalId = /data-approval="(payout-a@[^"]+)"/.exec(inbox)![1]!
      const approve = (user: string, tenant: string, id: string) =>
        Effect.promise(() =>
          fetch(`${server.url}actions/approve`, { method: "POST", headers: { ...form, ...as(user) }, body: new URLSearchParams({ csrf, tenant, id, approver: "alice", args: "" }), redirect: "manual" })
        )
      expect((yield* approve("alice", "globex", "payout-g@tool:0")).status).toBe(403)
      // bob typed "alice" in the form: he is still bob, whom the tool's approvers do not name.
      expect((yield* approve("bob", "acme", approvalId)).status).toBe(409)
      expect(sent).toEqual([])
      expect((yield* approve("alice", "acme", approvalId)).status).toBe(303)
      expect(sent).toEqual(["carol"])
    }).pipe(Effect.provide(Layer.provideMerge(
      Kernel.layer({ workflows: [payout] }),
      Layer.mergeAll(SqliteStore.layer({ filename: path.join(tempDir(), "tenants.db") }), ScriptedModel.layer([]), ToolRegistry.layer([pay]), Middleware.layer([]))
    )), Effect.scoped), 60_000)

  it.live("with approverOf, a response is the identified person's: a request it names nobody for responds to nothing", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect((yield* kernel.execute(review, { runId: "review-who", tenant: acme, input: { doc: "Q4" } })).status).toBe("paused")
      const server = yield* servedToIdentifiedPeople
      // Reading is open: anyone who reaches the inspector gets the page and its form token.
      const inbox = yield* Effect.promise(() => fetch(`${server.url}inbox`).then((r) => r.text()))
      const csrf = /name="csrf" value="([^"]+)"/.exec(inbox)![1]!
      const respond = (headers: Record<string, string>) =>
        Effect.promise(() =>
          fetch(`${server.url}actions/respond`, {
            method: "POST",
            headers: { ...form, ...headers },
            // The form's typed name is not who responds when the application identifies people.
            body: new URLSearchParams({ csrf, tenant: "acme", run: "review-who", approver: "carol", response: "{\"signed\":true}" }),
            redirect: "manual"
          }))
      const store = yield* EventStore.EventStore
      const anonymous = yield* respond({})
      expect({ http: anonymous.status, status: (yield* store.getRun("acme", "review-who")).status }).toEqual({ http: 409, status: "paused" })
      expect(yield* Effect.promise(() => anonymous.text())).toContain("approverOf names nobody")
      const carol = yield* respond({ "x-authenticated-user": "dave" })
      expect(carol.status).toBe(303)
      expect((yield* store.getRun("acme", "review-who")).status).toBe("completed")
      const responses = (yield* store.readEvents("acme", "review-who")).filter((e) => e.payload._tag === "HumanResponded")
      expect(responses.map((e) => e.payload)).toMatchObject([{ respondedBy: "dave" }])
    }).pipe(Effect.provide(appLayer(path.join(tempDir(), "who.db"))), Effect.scoped), 60_000)

  it.live("a default tenant outside `tenants` is refused when serving, not shown", () =>
    Effect.gen(function*() {
      const served = yield* Effect.flip(Inspector.serve({ tenant: "globex", tenants: ["acme"], port: 0 }))
      expect(served).toMatchObject({ _tag: "InvalidInput", what: "tenant" })
      expect(served.message).toContain("\"globex\" is not one of the tenants served")
    }).pipe(Effect.provide(appLayer(path.join(tempDir(), "default.db"))), Effect.scoped), 60_000)

  it.live("pages are kept by no cache, and an argument's bidirectional controls are shown, not obeyed", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      // U+202E turns the rest of the line around: "moc.elpmaxe@bob" would read as "bob@example.com".
      const waiting = yield* kernel.execute(notify, { runId: "notify-bidi", tenant: acme, input: { to: "\u202emoc.elpmaxe@bob" } })
      expect(waiting.status).toBe("paused")
      // A pause's reason is the workflow's text, made from its input: shown the same way.
      expect((yield* kernel.execute(review, { runId: "review-bidi", tenant: acme, input: { doc: "\u202e3Q" } })).status).toBe("paused")
      const server = yield* Inspector.serve({ tenant: "acme", port: 0 })
      const inbox = yield* Effect.promise(() => fetch(`${server.url}inbox`))
      expect(inbox.headers.get("cache-control")).toBe("no-store")
      const body = yield* Effect.promise(() => inbox.text())
      expect(body).toContain("\\u202emoc.elpmaxe@bob")
      expect(body).not.toContain("\u202e")
      const run = yield* Effect.promise(() => fetch(`${server.url}runs/notify-bidi?tenant=acme`))
      expect(run.headers.get("cache-control")).toBe("no-store")
      expect(yield* Effect.promise(() => run.text())).not.toContain("\u202e")
      const asset = yield* Effect.promise(() => fetch(`${server.url}assets/ui.js`))
      expect(asset.headers.get("cache-control")).toBe("no-cache")
    }).pipe(Effect.provide(appLayer(path.join(tempDir(), "bidi.db"))), Effect.scoped), 60_000)

  it.live("a paused run whose log was changed is shown broken, not answerable; the inbox still shows the others", () =>
    Effect.gen(function*() {
      const kernel = yield* Kernel.Kernel
      expect((yield* kernel.execute(review, { runId: "review-ok", tenant: acme, input: { doc: "Q1" } })).status).toBe("paused")
      expect((yield* kernel.execute(review, { runId: "review-bad", tenant: acme, input: { doc: "Q2" } })).status).toBe("paused")
      expect((yield* kernel.execute(notify, { runId: "notify-ok", tenant: acme, input: { to: "ann@example.com" } })).status).toBe("paused")
      expect((yield* kernel.execute(notify, { runId: "notify-bad", tenant: acme, input: { to: "joe@example.com" } })).status).toBe("paused")
      // Someone with write access to the store edits a pause's reason and an approval's address: their hashes no
      // longer match. Each is that run's problem; it used to fail the whole inbox (500) and every approvals listing.
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE events SET payload = replace(payload, 'sign off Q2', 'sign off Q9') WHERE run_id = 'review-bad' AND type = 'PauseRequested'`
      yield* sql`UPDATE events SET payload = replace(payload, 'joe@example.com', 'eve@evil.example') WHERE run_id = 'notify-bad' AND type = 'ApprovalRequested'`
      const page = yield* kernel.approvalsPage({ tenantId: "acme" })
      expect(page.approvals.map((a) => a.runId)).toEqual(["notify-ok"])
      expect(page.unreadable?.map((u) => u.runId).sort()).toEqual(["notify-bad", "review-bad"])
      const server = yield* Inspector.serve({ tenant: "acme", port: 0, allowActions: true, approver: "ops" })
      const inbox = yield* Effect.promise(() => fetch(`${server.url}inbox`))
      const body = yield* Effect.promise(() => inbox.text())
      expect(inbox.status, body.slice(-600)).toBe(200)
      expect(body).toContain("sign off Q1")
      expect(body).toMatch(/data-pause="review-bad"[\s\S]*its log does not verify[\s\S]*not answerable/)
      expect(body).not.toContain("sign off Q9")
      expect(body).toContain("ann@example.com")
      expect(body).not.toContain("eve@evil.example")
      expect(body).toMatch(/data-pause="notify-bad"[\s\S]*its log does not verify/)
    }).pipe(Effect.provide(appLayer(path.join(tempDir(), "broken.db"))), Effect.scoped), 60_000)
})
