// The worker of kernel/offloop.ts (plain JavaScript: a worker thread on Node 20 does not load tsx): it owns the
// connection and commits each group it is sent, then answers with the group's id.
import { parentPort, workerData } from "node:worker_threads"
import { SqliteStore } from "@artana/store-sqlite"

const db = new (SqliteStore.driver())(workerData)
db.pragma("journal_mode = WAL")
db.pragma("synchronous = FULL")
const insert = db.prepare("INSERT INTO t (run, seq, payload) VALUES (?, ?, ?)")
parentPort.on("message", ({ id, rows }) => {
  if (rows.length === 1) insert.run(rows[0].run, rows[0].seq, rows[0].payload)
  else {
    db.exec("BEGIN")
    for (const r of rows) insert.run(r.run, r.seq, r.payload)
    db.exec("COMMIT")
  }
  parentPort.postMessage(id)
})
