// `pnpm bench NAME` runs bench/NAME.ts (its default export); `pnpm bench` runs them all.
import { readdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { type BenchResult, machine, printTable, writeResult } from "./lib.js"

type Bench = (m: BenchResult["machine"]) => Promise<BenchResult>

const here = fileURLToPath(new URL(".", import.meta.url))
const available = readdirSync(here)
  .filter((f) => f.endsWith(".bench.ts"))
  .map((f) => f.slice(0, -".bench.ts".length))
  .sort()
const wanted = process.argv.slice(2).filter((a) => a !== "--")
const names = wanted.length === 0 ? available : wanted
for (const name of names) {
  if (!available.includes(name)) {
    console.error(`unknown benchmark "${name}"; available: ${available.join(", ")}`)
    process.exit(2)
  }
}
for (const name of names) {
  const mod: { default: Bench } = await import(`./${name}.bench.ts`)
  const result = await mod.default(machine())
  printTable(result)
  console.log(`wrote ${writeResult(result)}`)
}
