// `pnpm bench ui`: how long `artana ui`'s pages take to start arriving, against a bare query of the rows they show.
//
// The store: a SQLite file of 100,000 runs (one template run copied in SQL, as `pnpm bench scale` fills its store) and
// one run of 10,000 events (TestLog.LongRun). The server is the built `artana ui` (packages/cli/dist/bin.js) in a
// process of its own; this process asks it for a page, then runs the bare query of that page's rows on its own
// better-sqlite3 connection to the same file, alternating the order each round, so a busy machine slows both alike.
//
// runs_list_ttfb_vs_floor  time to the first byte of `/` (the first 50 runs, newest first) / the same page of the runs
//                          table, ordered and limited as the store's index reads it
// run_page_ttfb_vs_floor   time to the first byte of `/runs/long` (the run's row, its lineage, its first 200 events) /
//                          the run's row, its lineage's rows and its first 200 events, each payload JSON.parse'd
// run_chain_vs_floor       (detail) the chain badge `/runs/long/chain` (the whole log, verified) / a bare ordered
//                          SELECT of all 10,000 events with JSON.parse of each payload
// http_floor_ms (detail)   time to the first byte of a static asset: what any page pays for HTTP on this machine.
import { type ChildProcess, spawn } from "node:child_process"
import * as http from "node:http"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { EventStore } from "@artana/core"
import { TestLog } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"
import { tenant } from "./fixtures.js"
import { type BenchResult, median, nowUs, progress, type Row } from "./lib.js"
import { fill } from "./scale/resume.js"

const ROUNDS = 30
const EVENTS = 10_000

const BIN = createRequire(import.meta.url).resolve("@artana/cli/package.json").replace(/package\.json$/, "dist/bin.js")

/** Milliseconds to the first byte of the response's body (after its headers). */
const ttfb = (url: string) =>
  new Promise<number>((resolve, reject) => {
    const t0 = nowUs()
    http.get(url, (res) => {
      if (res.statusCode !== 200) reject(new Error(`${url}: ${res.statusCode}`))
      res.once("data", () => {
        const ms = (nowUs() - t0) / 1000
        res.resume()
        res.on("end", () => resolve(ms))
      })
    }).on("error", reject)
  })

const timed = (f: () => unknown) => {
  const t0 = nowUs()
  f()
  return (nowUs() - t0) / 1000
}

const seed = async (db: string) => {
  await Effect.runPromise(Effect.gen(function*() {
    const store = yield* EventStore.EventStore
    const events = TestLog.chain("template", tenant.tenantId, [], [
      { _tag: "RunStarted", workflow: "bench.steps", input: { n: 1 }, tenant },
      { _tag: "StepCompleted", name: "one", value: 1 },
      { _tag: "RunCompleted", output: 1 }
    ])
    yield* store.append({ runId: "template", tenantId: tenant.tenantId, expectedSeq: 0, events })
  }).pipe(Effect.provide(SqliteStore.layer({ filename: db }))))
  fill(db)
  // The long run last: the newest, on the list's first page.
  await Effect.runPromise(Effect.flatMap(EventStore.EventStore, (store) => TestLog.LongRun.write(store, { runId: "long", tenant, steps: EVENTS - 2 })).pipe(
    Effect.provide(SqliteStore.layer({ filename: db }))
  ))
}

const startUi = (db: string, cwd: string) =>
  new Promise<{ readonly child: ChildProcess; readonly url: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "ui", "--db", db, "--tenant", tenant.tenantId, "--port", "0"], { cwd, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString()
      const url = /http:\/\/\S+?:\d+\//.exec(out)?.[0]
      if (url !== undefined) resolve({ child, url })
    })
    child.on("exit", (code) => reject(new Error(`artana ui exited with ${code}: ${out}`)))
  })

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-ui-"))
  const db = join(dir, "ui.db")
  progress(`ui: writing 100,000 runs and a run of ${EVENTS} events`)
  await seed(db)
  const { child, url } = await startUi(db, dir)
  const Sqlite = SqliteStore.driver()
  const sqlite = new Sqlite(db, { readonly: true })
  try {
    const list = sqlite.prepare("SELECT * FROM runs WHERE tenant_id = ? ORDER BY created_at DESC, rowid ASC LIMIT 51")
    const run = sqlite.prepare("SELECT * FROM runs WHERE tenant_id = ? AND run_id = ?")
    // The lineage's rows on their index (tenant_id, root_run_id). The store's `listRuns({ rootRunId })` orders them newest
    // first, and SQLite then walks the list index of the tenant's runs instead: that scan is part of what the page costs.
    const family = sqlite.prepare("SELECT * FROM runs WHERE tenant_id = ? AND root_run_id = ? LIMIT 501")
    const events = sqlite.prepare("SELECT * FROM events WHERE tenant_id = ? AND run_id = ? AND seq >= ? ORDER BY seq LIMIT ?")
    const parsed = (rows: ReadonlyArray<unknown>) => {
      for (const row of rows) if (typeof row === "object" && row !== null && "payload" in row && typeof row.payload === "string") JSON.parse(row.payload)
      return rows.length
    }
    const floors = {
      list: () => list.all(tenant.tenantId).length,
      page: () => [run.all(tenant.tenantId, "long").length, family.all(tenant.tenantId, "long").length, parsed(events.all(tenant.tenantId, "long", 1, 200))],
      chain: () => parsed(events.all(tenant.tenantId, "long", 1, EVENTS))
    }
    const pages = { list: `${url}`, page: `${url}runs/long`, chain: `${url}runs/long/chain` }
    const measured: Record<"list" | "page" | "chain" | "http", Array<number>> = { list: [], page: [], chain: [], http: [] }
    const floor: Record<"list" | "page" | "chain", Array<number>> = { list: [], page: [], chain: [] }
    // Warm both sides once (the file cache, the server's first request), not counted.
    for (const k of ["list", "page", "chain"] as const) {
      await ttfb(pages[k])
      floors[k]()
    }
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 5 === 0) progress(`ui round ${round + 1}/${ROUNDS}`)
      measured.http.push(await ttfb(`${url}assets/ui.css`))
      for (const k of ["list", "page", "chain"] as const) {
        if (round % 2 === 0) {
          measured[k].push(await ttfb(pages[k]))
          floor[k].push(timed(floors[k]))
        } else {
          floor[k].push(timed(floors[k]))
          measured[k].push(await ttfb(pages[k]))
        }
      }
    }
    const row = (metric: string, k: "list" | "page" | "chain", baseline: string, detail: Record<string, number>): Row => ({
      metric,
      value: median(measured[k]) / median(floor[k]),
      unit: "ratio",
      baseline,
      baselineValue: median(floor[k]),
      ratio: median(measured[k]) / median(floor[k]),
      detail: { ttfb_median_ms: median(measured[k]), floor_median_ms: median(floor[k]), http_floor_ms: median(measured.http), rounds: ROUNDS, ...detail }
    })
    return {
      name: "ui",
      machine,
      rows: [
        row("runs_list_ttfb_vs_floor", "list", "bare SELECT of the page's 51 runs on the index order (same file, this process)", { runs_in_store: 100_001 }),
        row("run_page_ttfb_vs_floor", "page", "bare SELECTs of the run's row, its lineage and its first 200 events + JSON.parse", { events_in_run: EVENTS, events_shown: 200 }),
        row("run_chain_vs_floor", "chain", "bare ordered SELECT of the run's 10,000 events + JSON.parse", { events_in_run: EVENTS })
      ]
    }
  } finally {
    sqlite.close()
    child.kill("SIGTERM")
    rmSync(dir, { recursive: true, force: true })
  }
}
