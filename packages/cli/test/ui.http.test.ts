// `artana ui` over HTTP: off loopback every request needs the token it printed once (401 without); on loopback the Host
// header must be the server's (DNS rebinding); actions are refused read-only and without the form token; and a running
// run's page follows it over server-sent events as another process appends to the SQLite file.
import { type Event, EventStore } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import * as path from "node:path"
import { artana, cleanup, tempDir } from "./helpers.js"
import { acme, seededSqlite, startUi } from "./uiHelpers.js"

afterAll(cleanup)

/** A GET with the headers given, not following redirects (node's http: `fetch` would refuse to set Host). */
const get = (url: string, headers: Record<string, string> = {}, method = "GET", body?: string) =>
  Effect.async<{ readonly status: number; readonly headers: http.IncomingHttpHeaders; readonly body: string }>((resume) => {
    const req = http.request(url, { method, headers }, (res) => {
      let text = ""
      res.on("data", (d: Buffer) => void (text += d.toString()))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body: text })))
    })
    req.on("error", (e) => resume(Effect.die(e)))
    req.end(body)
  })

const seeded = () =>
  Effect.gen(function*() {
    const dir = tempDir()
    const db = path.join(dir, "runs.db")
    yield* seededSqlite(db)
    return { dir, db }
  })

describe("artana ui over HTTP", () => {
  it.live("off loopback: 401 without the printed token; the token as a bearer, or once in the URL (then a cookie)", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* seeded()
      const ui = yield* startUi(["--db", db, "--tenant", "acme", "--host", "0.0.0.0"], dir)
      const token = ui.token!
      expect(token.length).toBeGreaterThanOrEqual(32)
      const port = new URL(ui.url).port
      const base = `http://127.0.0.1:${port}`
      for (const route of ["/", "/runs/research?tenant=acme", "/runs/research/chain?tenant=acme", "/inbox", "/assets/ui.js"]) {
        const refused = yield* get(`${base}${route}`)
        expect(refused.status).toBe(401)
        expect(refused.body).not.toContain("research")
      }
      expect((yield* get(`${base}/?tenant=acme`, { authorization: "Bearer wrong" })).status).toBe(401)
      expect((yield* get(`${base}/?tenant=acme&token=wrong`)).status).toBe(401)
      const bearer = yield* get(`${base}/?tenant=acme`, { authorization: `Bearer ${token}` })
      expect(bearer.status).toBe(200)
      expect(bearer.body).toContain("research::sub_agent::a")
      const once = yield* get(`${base}/runs/research?tenant=acme&token=${token}`)
      expect(once.status).toBe(303)
      expect(once.headers.location).toBe("/runs/research?tenant=acme")
      // A link `//evil.example/?token=...` (a valid token) redirects within the server, never to another host.
      expect((yield* get(`${base}//evil.example/?token=${token}`)).headers.location).toBe("/evil.example/")
      const cookie = String(once.headers["set-cookie"]).split(";")[0]!
      expect(String(once.headers["set-cookie"])).toMatch(/HttpOnly/i)
      // Named after the port: a browser sends one host's cookies to every port, and another inspector on this host
      // keeps its own cookie beside this one (one name would have each login log the other inspector out).
      expect(cookie.startsWith(`artana_ui_token_${port}=`)).toBe(true)
      const other = yield* startUi(["--db", db, "--tenant", "acme", "--host", "0.0.0.0"], dir)
      const otherPort = new URL(other.url).port
      const otherCookie = String((yield* get(`http://127.0.0.1:${otherPort}/?token=${other.token!}`)).headers["set-cookie"]).split(";")[0]!
      const both = `${cookie}; ${otherCookie}`
      const withCookie = yield* get(`${base}/runs/research?tenant=acme`, { cookie: both })
      expect(withCookie.status).toBe(200)
      expect(withCookie.body).toContain("subtree $0.9375")
      expect((yield* get(`http://127.0.0.1:${otherPort}/runs/research?tenant=acme`, { cookie: both })).status).toBe(200)
      // One inspector's cookie opens nothing on the other.
      expect((yield* get(`http://127.0.0.1:${otherPort}/runs/research?tenant=acme`, { cookie })).status).toBe(401)
      // Printed once: on stderr, at the start.
      expect(ui.stderr().split(token).length - 1).toBe(1)
    }).pipe(Effect.scoped))

  it.live("on loopback: another Host is refused; read-only refuses actions; actions need the page's form token", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* seeded()
      // A run paused for a person: the inbox lists it.
      yield* Effect.flatMap(EventStore.EventStore, (s) =>
        s.append({
          runId: "waiting",
          tenantId: "acme",
          expectedSeq: 0,
          events: TestLog.chain("waiting", "acme", [], [
            { _tag: "RunStarted", workflow: "review", input: null, tenant: acme },
            { _tag: "PauseRequested", reason: "sign off the Q3 summary", ticket: "t-1" }
          ])
        })).pipe(Effect.provide(SqliteStore.layer({ filename: db })))
      const readOnly = yield* startUi(["--db", db, "--tenant", "acme"], dir)
      expect((yield* get(`${readOnly.url}?tenant=acme`)).status).toBe(200)
      const rebound = yield* get(`${readOnly.url}?tenant=acme`, { host: "attacker.example:80" })
      expect(rebound.status).toBe(403)
      expect(rebound.body).not.toContain("research")
      const page = yield* get(`${readOnly.url}inbox?tenant=acme`)
      expect(page.body).toContain("sign off the Q3 summary")
      expect(page.body).not.toContain("<form method=\"post\"")
      const form = { "content-type": "application/x-www-form-urlencoded" }
      expect((yield* get(`${readOnly.url}actions/respond`, form, "POST", "run=waiting&tenant=acme&response={}")).status).toBe(403)

      const acting = yield* startUi(["--db", db, "--tenant", "acme", "--allow-actions", "--approver", "ops"], dir)
      const inbox = yield* get(`${acting.url}inbox?tenant=acme`)
      expect(inbox.body).toContain("action=\"/actions/respond\"")
      const token = /name="csrf" value="([^"]+)"/.exec(inbox.body)?.[1]
      expect(token).toBeDefined()
      expect((yield* get(`${acting.url}actions/respond`, form, "POST", "run=waiting&tenant=acme&response={}")).status).toBe(403)
      expect((yield* get(`${acting.url}actions/respond`, form, "POST", "run=waiting&tenant=acme&response={}&csrf=stale")).status).toBe(403)
      const crossSite = yield* get(`${acting.url}actions/respond`, { ...form, origin: "http://attacker.example" }, "POST", `run=waiting&tenant=acme&response={}&csrf=${token}`)
      expect(crossSite.status).toBe(403)
      // A body past 1 MiB is refused before anything reads it.
      const huge = yield* Effect.promise(() =>
        fetch(`${acting.url}actions/respond`, { method: "POST", headers: form, body: `csrf=${token}&response=${"x".repeat(1_100_000)}` }).then((r) => r.status, (e: unknown) => String(e))
      )
      // 413, or (the server answering before the client finished sending) the connection cut: never an action done.
      expect(huge === 413 || (typeof huge === "string" && huge.includes("fetch failed"))).toBe(true)
      // An opaque origin (a sandboxed frame's, a data: page's) is another page's too.
      expect((yield* get(`${acting.url}actions/respond`, { ...form, origin: "null" }, "POST", `run=waiting&tenant=acme&response={}&csrf=${token}`)).status).toBe(403)
      // With the token the action runs: the kernel refuses to resume a workflow the CLI does not have, and says so.
      const done = yield* get(`${acting.url}actions/respond`, form, "POST", `run=waiting&tenant=acme&response={}&csrf=${token}`)
      expect(done.status).toBe(409)
      expect(done.body).toContain("review")
      expect(done.body).toContain("class=\"notice problem\"")
    }).pipe(Effect.scoped))

  it.live("a fork's page draws where it came from (the run, a link, and the seq); the run's page lists its forks", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* seeded()
      const forked = yield* artana(["fork", "research", "--at", "1", "--db", db, "--tenant", "acme"], { cwd: dir })
      expect(forked.code, forked.stderr).toBe(0)
      const ui = yield* startUi(["--db", db, "--tenant", "acme"], dir)
      const page = yield* get(`${ui.url}runs/${encodeURIComponent("research::fork::1")}?tenant=acme`)
      expect(page.status, forked.stdout).toBe(200)
      const line = /<p class="forked" id="forked-from">(.*?)<\/p>/s.exec(page.body)?.[1]
      expect(line).toContain(`href="/runs/research?tenant=acme"`)
      expect(line).toContain("at seq 1")
      // The run it came from lists it among its forks (the runs' index of forks); a run that is no fork draws no origin.
      const source = (yield* get(`${ui.url}runs/research?tenant=acme`)).body
      expect(source).not.toContain("forked-from")
      const forks = /<div id="forks">(.*?)<\/div>/s.exec(source)?.[1]
      expect(forks).toContain(`href="/runs/${encodeURIComponent("research::fork::1")}?tenant=acme"`)
      expect((yield* get(`${ui.url}runs/${encodeURIComponent("research::sub_agent::a")}?tenant=acme`)).body).not.toContain(`id="forks"`)
    }).pipe(Effect.scoped))

  it.live("a running run's page follows it: each event appended by another process arrives as a row, then settled", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* seeded()
      const store = SqliteStore.layer({ filename: db })
      const append = (expectedSeq: number, payloads: ReadonlyArray<Event.EventPayload>) =>
        Effect.flatMap(EventStore.EventStore, (s) =>
          Effect.flatMap(s.readEvents("acme", "live-1"), (before) =>
            s.append({ runId: "live-1", tenantId: "acme", expectedSeq, events: TestLog.chain("live-1", "acme", before, payloads, Date.now()) }))).pipe(Effect.provide(store))
      yield* Effect.flatMap(EventStore.EventStore, (s) =>
        s.append({ runId: "live-1", tenantId: "acme", expectedSeq: 0, events: TestLog.chain("live-1", "acme", [], [{ _tag: "RunStarted", workflow: "steps", input: null, tenant: acme }], Date.now()) })).pipe(Effect.provide(store))
      const ui = yield* startUi(["--db", db, "--tenant", "acme"], dir)
      const runPage = yield* get(`${ui.url}runs/live-1?tenant=acme`)
      const live = /data-live="([^"]+)"/.exec(runPage.body)?.[1]?.replace(/&amp;/g, "&")
      expect(live).toBe("/runs/live-1/live?tenant=acme&after=1")
      const received: Array<string> = []
      const stream = yield* Effect.async<http.IncomingMessage>((resume) => {
        http.get(new URL(live!, ui.url), (res) => resume(Effect.succeed(res)))
      })
      stream.on("data", (d: Buffer) => void received.push(d.toString()))
      const text = () => received.join("")
      yield* append(1, [{ _tag: "StepCompleted", name: "one", value: 1 }])
      yield* Effect.promise(() => waitFor(() => text().includes("id=\"seq-2\"")))
      expect(text()).toMatch(/event: log\ndata: <tr class="event kind-other" id="seq-2"/)
      expect(text()).not.toContain("seq-1\"")
      yield* append(2, [{ _tag: "RunCompleted", output: 1 }])
      yield* Effect.promise(() => waitFor(() => text().includes("event: settled")))
      expect(text()).toContain("id=\"seq-3\"")
      stream.destroy()
    }).pipe(Effect.scoped))

  it.live("a run's page following it shows a pending approval with who may approve it, then settles", () =>
    Effect.gen(function*() {
      const { db, dir } = yield* seeded()
      const store = SqliteStore.layer({ filename: db })
      const started = TestLog.chain("live-2", "acme", [], [{ _tag: "RunStarted", workflow: "steps", input: null, tenant: acme }], Date.now())
      yield* Effect.flatMap(EventStore.EventStore, (s) => s.append({ runId: "live-2", tenantId: "acme", expectedSeq: 0, events: started })).pipe(Effect.provide(store))
      const ui = yield* startUi(["--db", db, "--tenant", "acme"], dir)
      const received: Array<string> = []
      const stream = yield* Effect.async<http.IncomingMessage>((resume) => {
        http.get(new URL("/runs/live-2/live?tenant=acme&after=1", ui.url), (res) => resume(Effect.succeed(res)))
      })
      stream.on("data", (d: Buffer) => void received.push(d.toString()))
      const text = () => received.join("")
      const pending: Event.EventPayload = { _tag: "ApprovalRequested", approvalId: "a-1", tool: "wire_funds", arguments: "{\"amount\":5}", approvers: ["ann", "bo"] }
      yield* Effect.flatMap(EventStore.EventStore, (s) =>
        s.append({ runId: "live-2", tenantId: "acme", expectedSeq: 1, events: TestLog.chain("live-2", "acme", started, [pending], Date.now()) })).pipe(Effect.provide(store))
      yield* Effect.promise(() => waitFor(() => text().includes("event: settled")))
      expect(text()).toMatch(/event: log\ndata: <tr class="event kind-person" id="seq-2"/)
      expect(text()).toContain("waits for approval by ann or bo (a-1)")
      expect(text()).toMatch(/event: settled\ndata: ApprovalPending/)
      stream.destroy()
    }).pipe(Effect.scoped))
})

/** Waits for a condition on what a stream delivered (bounded: a stream that never delivers fails the test). */
const waitFor = async (condition: () => boolean) => {
  for (let i = 0; i < 1200 && !condition(); i++) await new Promise((r) => setTimeout(r, 100))
  if (!condition()) throw new Error("the stream did not deliver it within 120 s")
}
