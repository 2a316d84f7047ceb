// Bytes allocated per durable tool step on the built dist (by hand, in bench/: `node kernel/stepHeap.mjs STEPS KIND SYNC [STORE] [TOP]`):
// V8's sampling heap profiler (256-byte interval, objects collected by minor and major GCs included) over one run of
// STEPS steps after a warm-up run of 500; prints KB per step and the TOP allocating functions (self bytes per step).
// KIND: tool | tool_one_commit; SYNC normal|full; STORE sqlite|memory. A copy of bench/ beside an older build measures that build.
import { mkdtempSync, rmSync } from "node:fs"
import { Session } from "node:inspector/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { stepRuntime } from "./stepTools.mjs"

const STEPS = Number(process.argv[2] ?? 3000)
const KIND = process.argv[3] ?? "tool"
const SYNC = process.argv[4] === "full" ? "full" : "normal"
const STORE = process.argv[5] ?? "sqlite"
const TOP = Number(process.argv[6] ?? 25)
const dir = mkdtempSync(join(tmpdir(), "artana-stepheap-"))
const { runtime, one: run } = stepRuntime(STORE, SYNC, dir)
const one = (runId, n) => run(runId, n, KIND)
const session = new Session()
session.connect()
let profile
try {
  await one("warm", 500)
  await session.post("HeapProfiler.startSampling", { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  await one("measured", STEPS)
  profile = (await session.post("HeapProfiler.stopSampling")).profile
} finally {
  session.disconnect()
  await runtime.dispose()
  rmSync(dir, { recursive: true, force: true })
}
const bySite = new Map()
let total = 0
const walk = (node) => {
  const self = node.selfSize
  total += self
  const f = node.callFrame
  const site = `${f.functionName || "(anonymous)"} ${f.url.replace(/.*\/node_modules\/\.pnpm\/([^/]+)\/.*/, "$1").replace(/.*\/packages\//, "")}:${f.lineNumber + 1}`
  if (self > 0) bySite.set(site, (bySite.get(site) ?? 0) + self)
  for (const child of node.children) walk(child)
}
walk(profile.head)
console.log(`${STORE} ${SYNC} ${KIND}: ${(total / STEPS / 1024).toFixed(2)} KB allocated per step (${STEPS} steps)`)
for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${(bytes / STEPS).toFixed(0).padStart(7)} B  ${site}`)
