// CPU per durable tool step on the built dist (by hand, in bench/: `node kernel/stepCpu.mjs STEPS ROUNDS KINDS SYNC [STORE]`):
// one run of STEPS steps per round and kind (after a warm-up run of 500), CPU from process.cpuUsage and wall time, us per step.
// KINDS: tool,tool_one_commit (default both); SYNC normal|full; STORE sqlite|memory. Plain JS so `node --cpu-prof` profiles
// the dist, and a copy of bench/ beside an older build measures that build (see runCpu.mjs).
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { stepRuntime } from "./stepTools.mjs"

const STEPS = Number(process.argv[2] ?? 3000)
const ROUNDS = Number(process.argv[3] ?? 3)
const KINDS = (process.argv[4] ?? "tool,tool_one_commit").split(",")
const SYNC = process.argv[5] === "full" ? "full" : "normal"
const STORE = process.argv[6] ?? "sqlite"
const dir = mkdtempSync(join(tmpdir(), "artana-stepcpu-"))
const { runtime, one } = stepRuntime(STORE, SYNC, dir)
const cpu = {}
const wall = {}
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const kind of KINDS) {
      await one(`w-${kind}-${r}`, 500, kind)
      const c0 = process.cpuUsage()
      const t0 = performance.now()
      await one(`r-${kind}-${r}`, STEPS, kind)
      const t = performance.now() - t0
      const c = process.cpuUsage(c0)
      ;(cpu[kind] ??= []).push((c.user + c.system) / STEPS)
      ;(wall[kind] ??= []).push((t * 1000) / STEPS)
    }
  }
} finally {
  await runtime.dispose()
  rmSync(dir, { recursive: true, force: true })
}
const summary = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  return `min ${sorted[0].toFixed(1)} median ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} (rounds ${values.map((v) => v.toFixed(0)).join(", ")})`
}
for (const kind of KINDS) {
  console.log(`${STORE} ${SYNC} ${kind}: CPU us per step ${summary(cpu[kind])}; wall us per step ${summary(wall[kind])}`)
}
