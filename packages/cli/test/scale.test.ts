// The read commands at a year's scale, run as users run them (child processes on real SQLite files): list-runs a
// page at a time with its cursor and time filters, show-run of a long run in pages and in bounded memory.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { Event } from "@artana/core"
import { EventStore } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { Plan, PlanRunner } from "@artana/cli"
import { Effect, Either } from "effect"
import * as path from "node:path"
import { artana, artanaJson, cleanup, longRun, sqliteKernel, tempDir, tenant } from "./helpers.js"

afterAll(cleanup)

const DAY = 86_400_000
// 2023-11-14T22:13:21Z: run i is created i days later.
const created = (i: number) => TestLog.T0 + i * DAY

let dir = ""
let runsDb = ""
let longDb = ""
let planDb = ""
const STEPS = 1200

beforeAll(async () => {
  dir = tempDir()
  runsDb = path.join(dir, "runs.db")
  longDb = path.join(dir, "long.db")
  const acme = tenant("acme")
  await Effect.runPromise(Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    // Seven runs of acme, a day apart; two of them in one millisecond (day 3); one of another tenant.
    const specs: ReadonlyArray<readonly [string, number, string, ReadonlyArray<Event.EventPayload>]> = [
      ["day-0", 0, "alpha", [{ _tag: "RunCompleted", output: null }]],
      ["day-1", 1, "beta", [{ _tag: "RunFailed", error: "no", errorTag: "ToolError" }]],
      ["day-2", 2, "alpha", []],
      ["day-3a", 3, "alpha", [{ _tag: "RunCompleted", output: null }]],
      ["day-3b", 3, "beta", [{ _tag: "RunCompleted", output: null }]],
      ["day-4", 4, "alpha", [{ _tag: "RunCompleted", output: null }]],
      ["day-5", 5, "beta", []]
    ]
    for (const [runId, day, workflow, more] of specs) {
      const events = TestLog.chain(runId, "acme", [], [{ _tag: "RunStarted", workflow, input: null, tenant: acme }, ...more], created(day) - 1)
      yield* store.append({ runId, tenantId: "acme", expectedSeq: 0, events })
    }
    const other = TestLog.chain("elsewhere", "globex", [], [{ _tag: "RunStarted", workflow: "alpha", input: null, tenant: tenant("globex") }], created(2))
    yield* store.append({ runId: "elsewhere", tenantId: "globex", expectedSeq: 0, events: other })
  }).pipe(Effect.provide(SqliteStore.layer({ filename: runsDb }))))
  // 20,000 events of 4 KB values: about 80 MB of log, more than the heap the memory test gives the command.
  await Effect.runPromise(longRun(longDb, "long", "acme", 20_000, 4000))
  // A plan of 1,200 steps: a start, each step's request and outcome, the end (2,402 events).
  planDb = path.join(dir, "plan.db")
  const steps = Array.from({ length: STEPS }, (_, i) => `  - { id: s${i}, tool: echo, args: { text: "${i}" } }`).join("\n")
  const plan = Either.getOrThrow(Plan.parse(`steps:\n${steps}\n`, { file: "plan.yaml" }))
  await Effect.runPromise(PlanRunner.run({ runId: "long-plan", tenant: acme, input: { plan } }).pipe(Effect.provide(sqliteKernel(planDb))))
}, 600_000)

interface Listed {
  readonly runs: ReadonlyArray<Event.RunInfo>
  readonly next: string | null
}

describe("artana list-runs at a year's scale", () => {
  it.live("--after pages through every run, newest first, each page giving the next one's cursor, under every filter", () =>
    Effect.gen(function*() {
      const walk = (filters: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const pages: Array<ReadonlyArray<string>> = []
          let after: string | null = null
          do {
            const page = yield* artanaJson(["list-runs", "--db", runsDb, "--tenant", "acme", "--limit", "2", ...filters, ...(after === null ? [] : ["--after", after])], { cwd: dir })
            expect(page.code).toBe(0)
            const listed = page.json as Listed
            pages.push(listed.runs.map((r) => r.runId))
            after = listed.next
          } while (after !== null && pages.length < 10)
          return pages
        })
      // Ties (day-3a, day-3b: one millisecond) in the order they were created, as before.
      expect(yield* walk([])).toEqual([["day-5", "day-4"], ["day-3a", "day-3b"], ["day-2", "day-1"], ["day-0"]])
      expect(yield* walk(["--workflow", "alpha"])).toEqual([["day-4", "day-3a"], ["day-2", "day-0"]])
      expect(yield* walk(["--status", "completed"])).toEqual([["day-4", "day-3a"], ["day-3b", "day-0"]])
      // --since is inclusive, --until exclusive; ISO dates and times, or ms since the epoch.
      const since = new Date(created(1)).toISOString()
      expect(yield* walk(["--since", since, "--until", String(created(4))])).toEqual([["day-3a", "day-3b"], ["day-2", "day-1"]])
      expect(yield* walk(["--since", new Date(created(3)).toISOString().slice(0, 10), "--status", "completed"])).toEqual([["day-4", "day-3a"], ["day-3b"]])
      // An age: every run here is years old.
      expect((yield* artanaJson(["list-runs", "--db", runsDb, "--tenant", "acme", "--since", "7d"], { cwd: dir })).json).toMatchObject({ runs: [], next: null })
    }))

  it.live("the console prints the next page's cursor and the exact command that shows it; that command shows the next page", () =>
    Effect.gen(function*() {
      const first = yield* artana(["list-runs", "--db", runsDb, "--tenant", "acme", "--limit", "3", "--workflow", "alpha"], { cwd: dir })
      expect(first.code).toBe(0)
      const lines = first.stdout.trim().split("\n")
      expect(lines.slice(1, 4).map((l) => l.split(/\s+/)[0])).toEqual(["day-4", "day-3a", "day-2"])
      const cursor = /next page cursor (\S+)\):$/.exec(lines[4]!)?.[1]
      expect(lines[4]).toBe(`3 runs of tenant acme, newest first; more follow (next page cursor ${cursor}):`)
      expect(lines[5]).toBe(`  artana list-runs --workflow alpha --limit 3 --after ${cursor} --tenant acme --db ${runsDb}`)
      // The command as printed, run as printed.
      const next = yield* artana(lines[5]!.trim().split(" ").slice(1), { cwd: dir })
      expect(next.code).toBe(0)
      expect(next.stdout.trim().split("\n").map((l) => l.split(/\s+/)[0])).toEqual(["RUN", "day-0", "1"])
      expect(next.stdout).toContain("1 run of tenant acme, newest first, after the cursor given")
      expect(next.stdout).not.toContain("more follow")
      // An age (`--since 3650d`) is passed on as the time it meant: the next page's window does not move.
      const aged = yield* artana(["list-runs", "--db", runsDb, "--tenant", "acme", "--limit", "3", "--since", "3650d"], { cwd: dir })
      const agedNext = aged.stdout.trim().split("\n").find((l) => l.includes("--after"))
      expect(agedNext).toMatch(/ --since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /)
      expect(agedNext).not.toContain("3650d")
      const agedPage = yield* artana(agedNext!.trim().split(" ").slice(1), { cwd: dir })
      expect(agedPage.code).toBe(0)
    }))

  it.live("a cursor no page gave out, and a time that is not one, are bad input (exit 2) saying what to give", () =>
    Effect.gen(function*() {
      const cursor = yield* artana(["list-runs", "--db", runsDb, "--tenant", "acme", "--after", "page-2"], { cwd: dir })
      expect(cursor.code).toBe(2)
      expect(cursor.stderr).toContain("invalid cursor: \"page-2\" is not a run list cursor: pass the cursor the previous page printed")
      const since = yield* artana(["list-runs", "--db", runsDb, "--tenant", "acme", "--since", "last tuesday", "--format", "json"], { cwd: dir })
      expect(since.code).toBe(2)
      expect(JSON.parse(since.stderr)).toMatchObject({ error: { tag: "InvalidInput", exitCode: 2 } })
      expect(since.stderr).toContain("invalid --since: \\\"last tuesday\\\" is not a time")
    }))
})

describe("artana show-run of a long run", () => {
  it.live("by default the first and last 50 events, and the command that shows the ones between", () =>
    Effect.gen(function*() {
      const shown = yield* artana(["show-run", "long", "--db", longDb, "--tenant", "acme"], { cwd: dir })
      expect(shown.code).toBe(0)
      const seqs = shown.stdout.split("\n").flatMap((l) => /^\s*(\d+)\s+\+/.exec(l)?.[1] ?? [])
      expect(seqs.map(Number)).toEqual([...Array.from({ length: 50 }, (_, i) => i + 1), ...Array.from({ length: 50 }, (_, i) => 19_951 + i)])
      expect(shown.stdout).toContain(`… 19900 events not shown (seq 51–19950): artana show-run long --from 51 --limit 1000 --tenant acme --db ${longDb}`)
      expect(shown.stdout).toContain("events    20000")

      const json = yield* artanaJson(["show-run", "long", "--db", longDb, "--tenant", "acme"], { cwd: dir })
      const doc = json.json as { run: Event.RunInfo; chain: { ok: boolean }; events: ReadonlyArray<Event.Event>; omitted: unknown; next: unknown }
      expect(doc.run.headSeq).toBe(20_000)
      expect(doc.chain.ok).toBe(true)
      expect(doc.events.map((e) => e.seq)).toEqual(seqs.map(Number))
      expect(doc.omitted).toEqual({ fromSeq: 51, toSeq: 19_950, events: 19_900 })
      expect(doc.next).toBeNull()
    }))

  it.live("--from SEQ --limit N shows that stretch, and the command for the page after it", () =>
    Effect.gen(function*() {
      const page = yield* artana(["show-run", "long", "--db", longDb, "--tenant", "acme", "--from", "1001", "--limit", "1500"], { cwd: dir })
      expect(page.code).toBe(0)
      const seqs = page.stdout.split("\n").flatMap((l) => /^\s*(\d+)\s+\+/.exec(l)?.[1] ?? []).map(Number)
      expect(seqs).toEqual(Array.from({ length: 1500 }, (_, i) => 1001 + i))
      expect(page.stdout).toContain(`more: artana show-run long --from 2501 --limit 1500 --tenant acme --db ${longDb}`)
      // One header over the pages of the table.
      expect(page.stdout.match(/SEQ\s+AT\s+STEP\s+EVENT\s+DETAIL/g)).toHaveLength(1)

      const last = yield* artanaJson(["show-run", "long", "--db", longDb, "--tenant", "acme", "--from", "19990", "--limit", "100"], { cwd: dir })
      const doc = last.json as { events: ReadonlyArray<Event.Event>; next: unknown; omitted: unknown }
      expect(doc.events.map((e) => e.seq)).toEqual(Array.from({ length: 11 }, (_, i) => 19_990 + i))
      expect(doc.events[10]!.payload).toEqual({ _tag: "RunCompleted", output: { steps: 19_998 } })
      expect(doc).toMatchObject({ next: null, omitted: null })

      const bad = yield* artana(["show-run", "long", "--db", longDb, "--tenant", "acme", "--from", "0"], { cwd: dir })
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain("invalid --from: 0 is not a whole number of 1 or more")
      // Past the end: refused, saying where the run ends (not an empty page).
      const past = yield* artana(["show-run", "long", "--db", longDb, "--tenant", "acme", "--from", "20001"], { cwd: dir })
      expect(past.code).toBe(2)
      expect(past.stderr).toContain("invalid --from: 20001 is past the end of run long: its last event is seq 20000")
    }))

  it.live("reads and prints in pages: an 80 MB log is shown, and its chain checked, by a command whose heap is capped at 64 MB", () =>
    Effect.gen(function*() {
      const capped = { NODE_OPTIONS: "--max-old-space-size=64" }
      const head = yield* artana(["show-run", "long", "--db", longDb, "--tenant", "acme"], { cwd: dir, env: capped })
      expect(head.stderr).toBe("")
      expect(head.code).toBe(0)
      // Every event, through the table a page at a time.
      const all = yield* artana(["show-run", "long", "--db", longDb, "--tenant", "acme", "--from", "1"], { cwd: dir, env: capped })
      expect(all.stderr).toBe("")
      expect(all.code).toBe(0)
      expect(all.stdout.split("\n").filter((l) => /^\s*\d+\s+\+/.test(l))).toHaveLength(20_000)
      const json = yield* artanaJson(["show-run", "long", "--db", longDb, "--tenant", "acme", "--from", "19000"], { cwd: dir, env: capped })
      expect(json.code).toBe(0)
      expect((json.json as { chain: { ok: boolean } }).chain.ok).toBe(true)
      // `verify` checks the whole chain under the same cap: a page at a time, never the whole log.
      const verified = yield* artanaJson(["verify", "long", "--db", longDb, "--tenant", "acme"], { cwd: dir, env: capped })
      expect(verified.code).toBe(0)
      expect(verified.json).toMatchObject({ ok: true })
    }))
})

describe("artana report of a long plan run", () => {
  interface Reported {
    readonly steps: ReadonlyArray<{ readonly id: string; readonly status: string }>
    readonly summary: { readonly steps: number; readonly ok: number; readonly skipped: number }
    readonly stretch?: { readonly omitted: unknown; readonly next: unknown }
    readonly chain: { readonly ok: boolean }
  }
  const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `s${from + i}`)

  it.live("by default the steps logged in its first and last 1,000 events, and the command that reports the rest", () =>
    Effect.gen(function*() {
      const json = yield* artanaJson(["report", "long-plan", "--db", planDb, "--tenant", "acme"], { cwd: dir })
      expect(json.code).toBe(0)
      const report = json.json as Reported
      // Step i is requested at seq 2 + 2i: s0-s499 start in seq 1-1000 (s499's outcome, at 1001, comes with it);
      // s701-s1199 in seq 1403-2402 (s700's outcome alone is at 1403: no step starts there).
      expect(report.steps.map((s) => s.id)).toEqual([...ids(0, 499), ...ids(701, 1199)])
      expect(report.steps.every((s) => s.status === "ok")).toBe(true)
      expect(report.summary).toMatchObject({ steps: 999, ok: 999, skipped: 0 })
      expect(report.stretch).toEqual({ omitted: { fromSeq: 1001, toSeq: 1402, events: 402 }, next: null })
      expect(report.chain.ok).toBe(true)

      const shown = yield* artana(["report", "long-plan", "--db", planDb, "--tenant", "acme"], { cwd: dir })
      expect(shown.code).toBe(0)
      expect(shown.stdout).toContain("a stretch of the log: the steps logged at seq 1–1000 and at seq 1403–2402")
      expect(shown.stdout).toContain(`the steps logged at seq 1001–1402 are not shown: artana report long-plan --from 1001 --limit 1000 --tenant acme --db ${planDb}`)
    }))

  it.live("--from SEQ --limit N reports the steps that start in that stretch, whole, and names the next page", () =>
    Effect.gen(function*() {
      const json = yield* artanaJson(["report", "long-plan", "--db", planDb, "--tenant", "acme", "--from", "1001", "--limit", "400"], { cwd: dir })
      expect(json.code).toBe(0)
      const report = json.json as Reported
      expect(report.steps.map((s) => s.id)).toEqual(ids(500, 699))
      expect(report.steps.every((s) => s.status === "ok")).toBe(true)
      expect(report.stretch).toEqual({ omitted: null, next: 1401 })
      const shown = yield* artana(["report", "long-plan", "--db", planDb, "--tenant", "acme", "--from", "1001", "--limit", "400"], { cwd: dir })
      expect(shown.stdout).toContain(`more: artana report long-plan --from 1401 --limit 400 --tenant acme --db ${planDb}`)
      // A short run is reported whole, as before.
      const all = yield* artanaJson(["report", "long-plan", "--db", planDb, "--tenant", "acme", "--from", "1"], { cwd: dir })
      expect((all.json as Reported).steps).toHaveLength(STEPS)
      expect((all.json as Reported).summary).toMatchObject({ steps: STEPS, ok: STEPS })
      const past = yield* artana(["report", "long-plan", "--db", planDb, "--tenant", "acme", "--from", "99999999"], { cwd: dir })
      expect(past.code).toBe(2)
      expect(past.stderr).toMatch(/invalid --from: 99999999 is past the end of run long-plan: its last event is seq \d+/)
    }))
})

describe("artana show-run of a run in a lineage of 100,000 runs", () => {
  const LINEAGE = 100_000
  let lineageDb = ""
  beforeAll(async () => {
    lineageDb = path.join(dir, "lineage.db")
    const acme = tenant("acme")
    await Effect.runPromise(Effect.gen(function*() {
      const store = yield* EventStore.EventStore
      const root = TestLog.chain("root", "acme", [], [{ _tag: "RunStarted", workflow: "alpha", input: null, tenant: acme }], created(0))
      yield* store.append({ runId: "root", tenantId: "acme", expectedSeq: 0, events: root })
      const child = TestLog.chain("root::child", "acme", [], [
        { _tag: "RunStarted", workflow: "beta", input: null, tenant: acme, parentRunId: "root", rootRunId: "root" }
      ], created(1))
      yield* store.append({ runId: "root::child", tenantId: "acme", expectedSeq: 0, events: child })
    }).pipe(Effect.provide(SqliteStore.layer({ filename: lineageDb }))))
    // The rest of the lineage in bulk: copies of the child's row (no events of their own), created after it.
    const Sqlite = SqliteStore.driver()
    const db = new Sqlite(lineageDb)
    const columns = (db.prepare(`SELECT name FROM pragma_table_info('runs')`).all() as ReadonlyArray<{ readonly name: string }>).map((c) => c.name)
    const select = columns.map((c) => (c === "run_id" ? `'bulk-' || n.i` : c === "created_at" ? `created_at + n.i` : c)).join(", ")
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) INSERT INTO runs (${columns.join(", ")}) SELECT ${select} FROM runs, n WHERE run_id = 'root::child'`
    ).run(LINEAGE - 2)
    db.close()
  }, 600_000)

  it.live("draws the tree from a page of the lineage (the newest runs and the path to the run) and prints the command that pages the rest", () =>
    Effect.gen(function*() {
      // A heap far below what 100,000 run rows and their tree take.
      const capped = { NODE_OPTIONS: "--max-old-space-size=48" }
      const shown = yield* artana(["show-run", "root::child", "--db", lineageDb, "--tenant", "acme"], { cwd: dir, env: capped })
      expect(shown.stderr).toBe("")
      expect(shown.code).toBe(0)
      const lines = shown.stdout.split("\n")
      const tree = lines.slice(lines.indexOf("lineage") + 1, lines.indexOf("events"))
      expect(tree.length).toBeLessThanOrEqual(104)
      expect(tree[0]).toContain("root  alpha")
      expect(tree.some((l) => l.includes("root::child") && l.includes("this run"))).toBe(true)
      expect(shown.stdout).toContain("its tree of more than")
      const more = /the rest: artana list-runs --root root --after (\S+) --tenant acme --db (\S+)/.exec(shown.stdout)
      expect(more?.[2]).toBe(lineageDb)

      const json = yield* artanaJson(["show-run", "root::child", "--db", lineageDb, "--tenant", "acme"], { cwd: dir, env: capped })
      const doc = json.json as { lineageNext: string | null; lineage: { runId: string; children: ReadonlyArray<{ runId: string }> } }
      expect(doc.lineageNext).toBe(more?.[1])
      expect(doc.lineage.runId).toBe("root")
      expect(doc.lineage.children.length).toBeLessThanOrEqual(101)
      expect(doc.lineage.children.map((c) => c.runId)).toContain("root::child")

      // The cursor pages the rest of the lineage, and only it.
      const page = yield* artanaJson(["list-runs", "--root", "root", "--after", doc.lineageNext ?? "", "--limit", "1000", "--db", lineageDb, "--tenant", "acme"], { cwd: dir })
      const listed = page.json as Listed
      expect(listed.runs).toHaveLength(1000)
      expect(listed.runs.every((r) => r.rootRunId === "root")).toBe(true)
      expect(listed.runs[0]!.runId).toBe(`bulk-${LINEAGE - 2 - 100}`)
      expect(listed.next).not.toBeNull()
    }), 300_000)
})
