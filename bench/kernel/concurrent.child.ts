// `concurrent()` in a process of its own (slowFlush.ts starts it with the slow-flush shim preloaded): prints its row
// as one JSON line.
import { concurrent } from "./concurrent.js"

const row = await concurrent(process.argv[2])
process.stdout.write(`${JSON.stringify(row)}\n`)
