// One claimer of the multi-process test (see ../processes.test.ts): it opens the SQLite file, says it is ready
// (the file `ready-<id>` in the barrier directory), waits for the start signal (the file `go` there), and claims
// batches until the queue has been empty a few times in a row. Prints one JSON line: the ids.
import { Duration, Effect } from "effect"
import { TaskQueue } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"
import * as fs from "node:fs"
import * as path from "node:path"

const [filename = "", barrier = "", workerId = "claimer"] = process.argv.slice(2)

/** Waits, however long the machine takes, until the parent says go: no start time to guess. */
const startSignal: Effect.Effect<void> = Effect.suspend(() =>
  fs.existsSync(path.join(barrier, "go")) ? Effect.void : Effect.zipRight(Effect.sleep(Duration.millis(5)), startSignal))

const program = Effect.gen(function*() {
  const queue = yield* TaskQueue.TaskQueue
  fs.writeFileSync(path.join(barrier, `ready-${workerId}`), "")
  yield* startSignal
  const claimed: Array<string> = []
  let empty = 0
  while (empty < 5) {
    const batch = yield* queue.claim({ workerId, limit: 3, leaseSeconds: 600 })
    claimed.push(...batch.map((t) => t.taskId))
    empty = batch.length === 0 ? empty + 1 : 0
    yield* Effect.sleep("2 millis")
  }
  return claimed
})

const main = Effect.provide(program, SqliteStore.layer({ filename, busyTimeout: "30 seconds" }))

Effect.runPromise(main).then(
  (claimed) => console.log(JSON.stringify({ workerId, claimed })),
  (error) => {
    console.log(JSON.stringify({ workerId, failed: String(error) }))
    process.exitCode = 1
  }
)
