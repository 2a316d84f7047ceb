// Whether a store on FILE gets a read-ahead in this process's heap (`sqliteReadAhead.ts`'s `roomFor`), for the test
// that starts it with a capped heap: `node --max-old-space-size=N --import tsx read-ahead-heap.ts FILE`. Prints one
// JSON line: {"driver","readAhead","heapLimitMb"}.
import { getHeapStatistics } from "node:v8"
import { Effect } from "effect"
import { driverName } from "../../src/internal/sqliteDriver.js"
import * as SqliteReadAhead from "../../src/internal/sqliteReadAhead.js"

const filename = process.argv[2]
if (filename === undefined) throw new Error("usage: read-ahead-heap.ts FILE")
const ahead = await Effect.runPromise(Effect.scoped(SqliteReadAhead.make(filename, 1000)))
const heapLimitMb = getHeapStatistics().heap_size_limit / 2 ** 20
process.stdout.write(`${JSON.stringify({ driver: driverName, readAhead: ahead !== undefined, heapLimitMb })}\n`)
