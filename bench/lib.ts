// Shared pieces of the benchmarks: rows with a baseline measured in the same process, the result file, the table.
import { mkdirSync, writeFileSync } from "node:fs"
import { cpus, totalmem } from "node:os"
import { fileURLToPath } from "node:url"

export interface Row {
  readonly metric: string
  /** The ratio (measured / baseline) for `_vs_` metrics, else the measured value. */
  readonly value: number
  readonly unit: string
  /** What the measured code is compared with. */
  readonly baseline: string
  readonly baselineValue: number
  readonly ratio: number
  /** Extra figures (medians, counts) for the reader. */
  readonly detail?: Record<string, number | string>
}

export interface BenchResult {
  readonly name: string
  readonly machine: { readonly cpu: string; readonly cores: number; readonly memoryGiB: number; readonly node: string; readonly platform: string }
  readonly rows: ReadonlyArray<Row>
}

export const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/**
 * The standard error of `median(xs)`: the spread (standard deviation) of the medians of 2,000 resamples of `xs` drawn
 * with replacement (a bootstrap; a fixed seed, so a run's figure is reproducible from its samples). What a row's value
 * would move by if its rounds were run again on the same machine state.
 */
export const medianSe = (xs: ReadonlyArray<number>): number => {
  let seed = 0x9e3779b9
  // mulberry32
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const medians: Array<number> = []
  const sample: Array<number> = new Array(xs.length)
  for (let b = 0; b < 2000; b++) {
    for (let i = 0; i < xs.length; i++) sample[i] = xs[Math.floor(random() * xs.length)]!
    medians.push(median(sample))
  }
  const mean = medians.reduce((a, m) => a + m, 0) / medians.length
  return Math.sqrt(medians.reduce((a, m) => a + (m - mean) ** 2, 0) / medians.length)
}

/** Microseconds since an arbitrary origin. */
export const nowUs = (): number => Number(process.hrtime.bigint()) / 1000

export const machine = (): BenchResult["machine"] => ({
  cpu: cpus()[0]?.model ?? "unknown",
  cores: cpus().length,
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  platform: `${process.platform}-${process.arch}`
})

const color = process.stdout.isTTY ? (code: number, s: string) => `\x1b[${code}m${s}\x1b[0m` : (_: number, s: string) => s

export const printTable = (result: BenchResult): void => {
  const header = ["metric", "value", "unit", "baseline", "baseline value", "ratio"]
  const body = result.rows.map((r) => [r.metric, fmt(r.value), r.unit, r.baseline, fmt(r.baselineValue), fmt(r.ratio)])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => (i === 0 || i === 2 || i === 3 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  console.log(color(1, `\n${result.name}`) + color(2, `  (${result.machine.cpu}, ${result.machine.cores} cores, node ${result.machine.node})`))
  console.log(color(1, line(header)))
  for (const row of body) console.log(line(row))
  for (const r of result.rows) {
    if (r.detail !== undefined) console.log(color(2, `  ${r.metric}: ${Object.entries(r.detail).map(([k, v]) => `${k}=${typeof v === "number" ? fmt(v) : v}`).join(", ")}`))
  }
}

const fmt = (n: number): string => (Number.isInteger(n) ? String(n) : Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toFixed(4))

export const writeResult = (result: BenchResult): string => {
  const dir = fileURLToPath(new URL("./results/", import.meta.url))
  mkdirSync(dir, { recursive: true })
  const file = `${dir}${result.name}.json`
  writeFileSync(file, JSON.stringify(result, null, 2) + "\n")
  return file
}

/** Progress on stderr, so long runs show they are alive. */
export const progress = (message: string): void => {
  process.stderr.write(`${color(2, `· ${message}`)}\n`)
}
