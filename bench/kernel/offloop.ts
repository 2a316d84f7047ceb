// Group commit with the fsync on the event loop (SQLite's FULL: the main thread commits and syncs each group's
// transaction), against the store's design since Nov 29 2026 (`async_sync`: the group commits at NORMAL and the -wal file
// is synced with `fdatasync` on a thread of its own, the callers answered when it ends; see
// packages/store-sqlite/src/internal/walFlush.ts), and against a worker thread that owns the connection (the main
// thread posts each group and goes on; the worker commits and answers: kernel/offloopWorker.mjs), on the store's
// driver, one SQLite file (WAL). Not a row of `pnpm bench kernel`: the measurement behind the decision in
// packages/store-sqlite/README.md ("Group commit and the event loop"). Run: `cd bench && npx tsx kernel/offloop.ts`
// (WORK_US sets the main thread's CPU per step of the concurrent case, 150 by default).
//
// one_run: one writer, one row per commit, nothing else to do: the latency of a commit, and the main thread's
//   busy time per commit (event-loop utilization: the worker's own CPU is not the main thread's).
// concurrent: RUNS writers, each doing WORK_US of CPU on the main thread before each of its STEPS commits (what a
//   durable step costs the kernel besides its statement); appends made in one turn of the loop are one group (one
//   transaction). With the worker, the next group's CPU overlaps the previous group's fsync.
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Worker } from "node:worker_threads"
import { SqliteStore } from "@artana/store-sqlite"

interface Row {
  readonly run: string
  readonly seq: number
  readonly payload: string
}

const open = (filename: string, sync: "FULL" | "NORMAL" = "FULL") => {
  const Sqlite = SqliteStore.driver()
  const db = new Sqlite(filename)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = " + sync)
  db.exec("CREATE TABLE IF NOT EXISTS t (run TEXT NOT NULL, seq INTEGER NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (run, seq)) WITHOUT ROWID")
  const insert = db.prepare("INSERT INTO t (run, seq, payload) VALUES (?, ?, ?)")
  /** One group: alone, a plain INSERT; else one transaction. */
  const write = (rows: ReadonlyArray<Row>) => {
    if (rows.length === 1) return void insert.run(rows[0]!.run, rows[0]!.seq, rows[0]!.payload)
    db.exec("BEGIN")
    for (const r of rows) insert.run(r.run, r.seq, r.payload)
    db.exec("COMMIT")
  }
  return { write, close: () => void db.close() }
}

/** A group committer: `commit(row)` resolves once the group holding it has committed. */
const committer = (writeGroup: (rows: ReadonlyArray<Row>) => Promise<void>) => {
  let pending: Array<{ row: Row; done: () => void }> = []
  const flush = () => {
    const group = pending
    pending = []
    void writeGroup(group.map((p) => p.row)).then(() => group.forEach((p) => p.done()))
  }
  return (row: Row) =>
    new Promise<void>((done) => {
      if (pending.length === 0) setImmediate(flush)
      pending.push({ row, done })
    })
}

const onLoop = (filename: string) => {
  const { close, write } = open(filename)
  return { writeGroup: (rows: ReadonlyArray<Row>) => Promise.resolve(write(rows)), close: async () => close() }
}

/** The store's design: committed at NORMAL, then the -wal file synced on a thread of its own (the store's sync thread). */
const asyncSync = (filename: string) => {
  const { close, write } = open(filename, "NORMAL")
  const fd = fs.openSync(`${filename}-wal`, "r+")
  const syncer = new Worker(
    `const { parentPort } = require("node:worker_threads"); const fs = require("node:fs");
     parentPort.on("message", (fd) => { fs.fdatasyncSync(fd); parentPort.postMessage(fd) })`,
    { eval: true }
  )
  const waiting: Array<() => void> = []
  syncer.on("message", () => waiting.shift()?.())
  return {
    writeGroup: (rows: ReadonlyArray<Row>) => {
      write(rows)
      return new Promise<void>((resolve) => {
        waiting.push(resolve)
        syncer.postMessage(fd)
      })
    },
    close: async () => {
      await syncer.terminate()
      fs.closeSync(fd)
      close()
    }
  }
}

const offLoop = (filename: string) => {
  open(filename).close() // the table
  const worker = new Worker(new URL("./offloopWorker.mjs", import.meta.url), { workerData: filename })
  const waiting = new Map<number, () => void>()
  let next = 0
  worker.on("message", (id: number) => {
    waiting.get(id)?.()
    waiting.delete(id)
  })
  return {
    writeGroup: (rows: ReadonlyArray<Row>) =>
      new Promise<void>((resolve) => {
        const id = next++
        waiting.set(id, resolve)
        worker.postMessage({ id, rows })
      }),
    close: () => worker.terminate().then(() => undefined)
  }
}

const PAYLOAD = JSON.stringify({ _tag: "ToolCompleted", tool: "echo", result: { ok: true, i: 1 }, note: "a durable step of the benchmark" })
const busy = (us: number) => {
  const end = performance.now() + us / 1000
  while (performance.now() < end) { /* the kernel's CPU for a step */ }
}

const ONE_RUN = 1000
const RUNS = 100
const STEPS = 10
const WORK_US = Number(process.env.WORK_US ?? 150)

type Design = "on_loop" | "off_loop" | "async_sync"
const measure = async (design: Design, filename: string, prefix: string) => {
  const store = design === "on_loop" ? onLoop(filename) : design === "async_sync" ? asyncSync(filename) : offLoop(filename)
  const commit = committer(store.writeGroup)
  await commit({ run: `${prefix}-warm`, seq: 0, payload: PAYLOAD })
  let elu = performance.eventLoopUtilization()
  let t0 = performance.now()
  for (let i = 0; i < ONE_RUN; i++) await commit({ run: `${prefix}-one`, seq: i, payload: PAYLOAD })
  const oneRun = { us_per_commit: ((performance.now() - t0) * 1000) / ONE_RUN, main_thread_busy_us_per_commit: (performance.eventLoopUtilization(elu).active * 1000) / ONE_RUN }
  elu = performance.eventLoopUtilization()
  t0 = performance.now()
  await Promise.all(Array.from({ length: RUNS }, async (_, r) => {
    for (let i = 0; i < STEPS; i++) {
      busy(WORK_US)
      await commit({ run: `${prefix}-c${r}`, seq: i, payload: PAYLOAD })
    }
  }))
  const seconds = (performance.now() - t0) / 1000
  await store.close()
  return { design, one_run: oneRun, concurrent: { steps_per_second: (RUNS * STEPS) / seconds, main_thread_utilization: performance.eventLoopUtilization(elu).utilization } }
}

{
  const dir = fs.mkdtempSync(join(tmpdir(), "artana-offloop-"))
  try {
    const results = []
    for (let round = 0; round < 3; round++) {
      const order: ReadonlyArray<Design> = round % 2 === 0 ? ["on_loop", "async_sync", "off_loop"] : ["off_loop", "async_sync", "on_loop"]
      for (const design of order) {
        results.push(await measure(design, join(dir, "bench.db"), `${design}-${round}`))
      }
    }
    for (const r of results) console.log(JSON.stringify(r))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
