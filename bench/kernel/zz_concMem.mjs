import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { stepRuntime } from "/work/main/bench/kernel/stepTools.mjs"
const STORE = process.argv[2] ?? "memory"
const STEPS = Number(process.argv[3] ?? 10)
const ROUNDS = Number(process.argv[4] ?? 8)
const dir = mkdtempSync(join(tmpdir(), "artana-concmem-"))
const { runtime, one } = stepRuntime(STORE, "full", dir)
const cpu = [], rate = []
for (let r = -3; r < ROUNDS; r++) {
  const c0 = process.cpuUsage(); const t0 = performance.now()
  await Promise.all(Array.from({ length: 100 }, (_, i) => one(`c${r}-${i}`, STEPS, "tool")))
  const c = process.cpuUsage(c0); const t = performance.now() - t0
  if (r >= 0) { cpu.push((c.user + c.system) / (100 * STEPS)); rate.push(100 * STEPS / (t / 1000)) }
}
await runtime.dispose(); rmSync(dir, { recursive: true, force: true })
const med = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)].toFixed(1)
console.log(STORE, STEPS, "cpu/step", med(cpu), "steps/s", med(rate))
