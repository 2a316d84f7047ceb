// One claimer of the multi-process test (see ../processes.test.ts): at the start signal it opens the SQLite
// file and claims batches until the queue has been empty a few times in a row. Prints one JSON line: the ids.
import { Effect } from "effect"
import { TaskQueue } from "@artana/core"
import { SqliteStore } from "@artana/store-sqlite"

const [filename = "", startAt = "0", workerId = "claimer"] = process.argv.slice(2)

const program = Effect.gen(function*() {
  const queue = yield* TaskQueue.TaskQueue
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

const main = Effect.gen(function*() {
  yield* Effect.sleep(Math.max(0, Number(startAt) - Date.now()))
  return yield* Effect.provide(program, SqliteStore.layer({ filename, busyTimeout: "30 seconds" }))
})

Effect.runPromise(main).then(
  (claimed) => console.log(JSON.stringify({ workerId, claimed })),
  (error) => {
    console.log(JSON.stringify({ workerId, failed: String(error) }))
    process.exitCode = 1
  }
)
