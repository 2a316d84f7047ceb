// concurrent_100_vs_floor_slow_flush (part of `pnpm bench kernel`): `concurrent_100_vs_floor` measured again on a disk
// whose flush takes 8 ms, the disk the figures came from (its floor: 126 commits/s; this machine's is ~60 times
// faster). The ratio divides by the floor's commits/s, so it says how much an fsync's wait is shared: on a disk whose
// flush costs ~150 us it is bounded by the CPU of the steps, not by grouping. The slow disk is a shim (slowFlush.c,
// compiled here with the system's C compiler and preloaded into a child process with LD_PRELOAD) that sleeps 8 ms
// before each fsync and fdatasync of the process: the floor and the store meet the same disk, in the same process.
// Linux only, and only where a C compiler (`cc`) is installed; elsewhere the row is left out and the progress says so.
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type BenchResult, progress } from "../lib.js"

const FLUSH_US = 8000
const SHIM = fileURLToPath(new URL("./slowFlush.c", import.meta.url))
const CHILD = fileURLToPath(new URL("./concurrent.child.ts", import.meta.url))
const BENCH_DIR = fileURLToPath(new URL("..", import.meta.url))

export const concurrentOnSlowDisk = async (): Promise<BenchResult["rows"][number] | undefined> => {
  if (process.platform !== "linux") {
    progress("concurrent_100_vs_floor_slow_flush: left out (its slow disk is an LD_PRELOAD shim: Linux only)")
    return undefined
  }
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-flush-"))
  try {
    const library = join(dir, "slowFlush.so")
    const compiled = spawnSync("cc", ["-O2", "-shared", "-fPIC", "-o", library, SHIM, "-ldl"], { encoding: "utf8" })
    if (compiled.error !== undefined || compiled.status !== 0) {
      progress(`concurrent_100_vs_floor_slow_flush: left out (no C compiler to build its shim: ${compiled.error?.message ?? compiled.stderr.trim()})`)
      return undefined
    }
    progress(`concurrent_100_vs_floor_slow_flush: the same row on a disk whose flush takes ${FLUSH_US / 1000} ms (a child process)`)
    const out = spawnSync(process.execPath, ["--import", "tsx", CHILD, "concurrent_100_vs_floor_slow_flush"], {
      cwd: BENCH_DIR,
      encoding: "utf8",
      env: { ...process.env, LD_PRELOAD: library, SLOW_FLUSH_US: String(FLUSH_US) },
      stdio: ["ignore", "pipe", "inherit"]
    })
    if (out.status !== 0) throw new Error(`concurrent.child.ts exited with ${out.status ?? out.signal}`)
    const row = JSON.parse(out.stdout.trim().split("\n").at(-1)!) as BenchResult["rows"][number]
    // Each floor commit flushes once: with the shim in place it cannot make more than 1e6 / FLUSH_US commits a second.
    // More, and the shim was not in the process's path to the disk (a C library it does not interpose): no row.
    if (row.baselineValue > 1e6 / FLUSH_US) {
      progress(`concurrent_100_vs_floor_slow_flush: left out (the shim did not slow the floor: ${Math.round(row.baselineValue)} commits/s)`)
      return undefined
    }
    return { ...row, baseline: `${row.baseline}, on a disk whose flush takes ${FLUSH_US / 1000} ms`, detail: { ...row.detail, flush_ms: FLUSH_US / 1000 } }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
