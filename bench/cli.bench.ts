// `pnpm bench cli`: how long `artana --help` takes to start, as a person (or a shell completion) feels it.
//
// help_cold_start_ms: the wall time of a new `node packages/cli/dist/bin.js --help` process, start to exit (median
//   of ROUNDS; target at most 500 ms on this machine class) / a new `node -e 0` process, the floor of any Node
//   command on the same machine. The two alternate process by process (the order flips each round), so a busy
//   machine slows both alike; the ratio is the figure to compare across machines.
// command_cold_start_ms (detail only): `artana list-runs --db missing.db` (exit 5, not found), for contrast: a command
//   that loads @effect/cli, the kernel and the stores before it can say anything.
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type BenchResult, median, nowUs, progress } from "./lib.js"

const ROUNDS = 21
const COMMAND_ROUNDS = 5

/** The built `artana` executable, as installed (`pnpm bench` builds it first). */
const BIN = createRequire(import.meta.url).resolve("@artana/cli/package.json").replace(/package\.json$/, "dist/bin.js")

/** Wall time in milliseconds of one process, start to exit; it must exit with `expected`. */
const timed = (args: ReadonlyArray<string>, cwd: string, expected = 0): number => {
  const t0 = nowUs()
  const child = spawnSync(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } })
  const ms = (nowUs() - t0) / 1000
  if (child.status !== expected) throw new Error(`node ${args.join(" ")} exited ${child.status}: ${child.stderr.toString()}`)
  return ms
}

const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!
}

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  const dir = mkdtempSync(join(tmpdir(), "artana-bench-cli-"))
  try {
    progress(`help_cold_start_ms: ${ROUNDS} rounds of \`artana --help\` and \`node -e 0\`, alternated`)
    timed([BIN, "--help"], dir) // the first start also fills the file cache: not counted
    const help: Array<number> = []
    const floor: Array<number> = []
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        help.push(timed([BIN, "--help"], dir))
        floor.push(timed(["-e", "0"], dir))
      } else {
        floor.push(timed(["-e", "0"], dir))
        help.push(timed([BIN, "--help"], dir))
      }
    }
    progress(`command_cold_start_ms: ${COMMAND_ROUNDS} runs of \`artana list-runs --db missing.db\``)
    const missing = join(dir, "missing.db")
    const command: Array<number> = []
    for (let i = 0; i < COMMAND_ROUNDS; i++) command.push(timed([BIN, "list-runs", "--db", missing], dir, 5))

    const value = median(help)
    const baselineValue = median(floor)
    return {
      name: "cli",
      machine,
      rows: [{
        metric: "help_cold_start_ms",
        value,
        unit: "ms",
        baseline: "node -e 0 (a new process, same machine, alternated)",
        baselineValue,
        ratio: value / baselineValue,
        detail: {
          target_ms: 500,
          help_p90_ms: percentile(help, 0.9),
          node_p90_ms: percentile(floor, 0.9),
          command_cold_start_ms: median(command),
          rounds: ROUNDS
        }
      }]
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
