// CPU counters for the PostgreSQL benchmarks: this process's, and a set of server processes' (a pool's backends).
import { readFileSync } from "node:fs"

/** This process's CPU microseconds so far (user + system). */
export const nodeCpuUs = (): number => {
  const usage = process.cpuUsage()
  return usage.user + usage.system
}

/** CPU microseconds (user + system) of the server processes `pids`, from /proc (10 ms ticks). */
export const serverCpuUs = (pids: ReadonlyArray<number>): number => {
  let ticks = 0
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // a backend that ended
    }
  }
  return ticks * 10_000
}
