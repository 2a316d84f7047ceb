// Reads pages through core's read-ahead worker from READERS fibers at once, PAGES pages each, every page 256 rows of
// 20 KB payloads (a stand-in opener, no database: the worker's own queue is what is measured), each page taken as a
// verified read takes it (awaited, then its hashing stopped). The worker's heap after a full collection is read every
// 10 pages it reads; prints the largest, in MB, as one JSON line. `node --expose-gc --import tsx read-worker-queue.ts
// READERS PAGES` (the worker inherits --expose-gc).
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import * as ReadWorker from "../../../core/src/internal/readWorker.js"

const readers = Number(process.argv[2] ?? "4")
const pages = Number(process.argv[3] ?? "40")
const dir = mkdtempSync(join(tmpdir(), "artana-read-worker-queue-"))
const log = join(dir, "heap.log")

const opener: ReadWorker.Opener = {
  source: `(config) => {
    const v8 = require("node:v8")
    const fs = require("node:fs")
    let calls = 0
    return {
      rows: (text, params) => {
        if (++calls % 10 === 0) {
          global.gc()
          fs.appendFileSync(config.log, v8.getHeapStatistics().used_heap_size + "\\n")
        }
        const rows = []
        for (let i = 0; i < 256; i++) {
          const seq = params[2] + i
          rows.push([seq, "~id" + seq, 0, "StepCompleted", "k" + seq, Buffer.alloc(20000, 97 + (seq % 26)).toString(), "~" + "a".repeat(64), "~" + "b".repeat(64)])
        }
        return rows
      },
      close: () => {}
    }
  }`,
  config: { log }
}

try {
  await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const ahead = yield* ReadWorker.make(opener)
    if (!(yield* Effect.promise(() => ahead.ready()))) throw new Error("the read-ahead worker did not open")
    const reader = (k: number) =>
      Effect.gen(function*() {
        for (let p = 0; p < pages; p++) {
          const pending = ahead.request("page", [`run-${k}`, "tenant", p * 256 + 1, 256], "a".repeat(64), undefined)
          if (pending === undefined) throw new Error("the worker took no page")
          const page = yield* pending
          if (page === undefined) throw new Error("the worker read no page")
          page.hashed()
        }
      })
    yield* Effect.all(Array.from({ length: readers }, (_, k) => reader(k)), { concurrency: "unbounded" })
  })))
  const heaps = readFileSync(log, "utf8").trim().split("\n").map(Number)
  process.stdout.write(`${JSON.stringify({ samples: heaps.length, maxMb: Math.max(...heaps) / 1e6 })}\n`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
