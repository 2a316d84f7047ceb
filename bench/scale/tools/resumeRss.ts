// A driver for `resume_100k_rss_over_baseline_mb` alone (bench/scale/resume.ts; in tools/, which `pnpm bench scale`
// does not run as a group): writes the 100,000-step run once, then runs N rounds of the baseline process (`open`) and
// the resuming one (`resume`), each a fresh `long-run.child.ts` on a fresh copy of the file, and prints each round's
// peak RSS, the difference and the median.
//   node --import tsx scale/tools/resumeRss.ts [ROUNDS] [STEPS]     (started in bench/)
// NODE_FLAGS (e.g. "--trace-gc") is passed to the resuming child; its stderr/stdout go to TRACE_DIR/resume-N.log when set.
import { spawnSync } from "node:child_process"
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { median } from "../../lib.js"

const rounds = Number(process.argv[2] ?? "8")
const steps = Number(process.argv[3] ?? "100000")
const BENCH_DIR = fileURLToPath(new URL("../../", import.meta.url))
const CHILD = fileURLToPath(new URL("../../long-run.child.ts", import.meta.url))
const flags = (process.env["NODE_FLAGS"] ?? "").split(" ").filter((f) => f.length > 0)
const traceDir = process.env["TRACE_DIR"]

const child = (extra: ReadonlyArray<string>, args: ReadonlyArray<string>, log?: string) => {
  const out = spawnSync(process.execPath, [...extra, "--import", "tsx", CHILD, ...args], { cwd: BENCH_DIR, encoding: "utf8", maxBuffer: 1 << 28 })
  if (log !== undefined) writeFileSync(log, `${out.stdout}\n--- stderr\n${out.stderr}`)
  if (out.status !== 0) throw new Error(`long-run.child.ts ${args.join(" ")} exited with ${out.status ?? out.signal}\n${out.stderr.slice(-4000)}`)
  const line = out.stdout.trim().split("\n").filter((l) => l.startsWith("{")).pop() ?? ""
  const parsed: unknown = JSON.parse(line)
  if (typeof parsed !== "object" || parsed === null || !("peakRssMb" in parsed) || typeof parsed.peakRssMb !== "number") throw new Error(line)
  return { peakRssMb: parsed.peakRssMb, ms: "ms" in parsed && typeof parsed.ms === "number" ? parsed.ms : 0 }
}

const dir = mkdtempSync(join(tmpdir(), "artana-rss-"))
try {
  const written = join(dir, "long.db")
  child([], ["write", written, "long", String(steps)])
  const over: Array<number> = []
  const resumed: Array<number> = []
  const opened: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    const db = join(dir, `round-${round}.db`)
    copyFileSync(written, db)
    const open = child([], ["open", db, "long"]).peakRssMb
    const resume = child(flags, ["resume", db, "long"], traceDir === undefined ? undefined : join(traceDir, `resume-${round}.log`))
    rmSync(db, { force: true })
    rmSync(`${db}-wal`, { force: true })
    rmSync(`${db}-shm`, { force: true })
    opened.push(open)
    resumed.push(resume.peakRssMb)
    over.push(resume.peakRssMb - open)
    process.stdout.write(
      `round ${round + 1}: open ${open.toFixed(1)} MB, resume ${resume.peakRssMb.toFixed(1)} MB, over ${(resume.peakRssMb - open).toFixed(1)} MB, resume ${
        resume.ms.toFixed(0)
      } ms\n`
    )
  }
  process.stdout.write(
    `median: open ${median(opened).toFixed(1)}, resume ${median(resumed).toFixed(1)}, over (of medians) ${(median(resumed) - median(opened)).toFixed(1)} MB, max over ${
      Math.max(...over).toFixed(1)
    }\n`
  )
} finally {
  rmSync(dir, { recursive: true, force: true })
}
