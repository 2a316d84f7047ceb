// `pnpm bench scale`: runs of any length, stores of any size (issue "Runs of any length"). Each module of
// bench/scale/ measures one group of rows (each against its floor, in the same process, interleaved) and is
// run in turn; `pnpm bench scale GROUP...` is not supported: the groups are cheap enough to run together.
import { readdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { type BenchResult, progress, type Row } from "./lib.js"

/** A group of rows: bench/scale/NAME.ts's default export. */
export type Group = () => Promise<ReadonlyArray<Row>>

const dir = fileURLToPath(new URL("./scale/", import.meta.url))

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  const groups = readdirSync(dir).filter((f) => f.endsWith(".ts")).sort()
  const rows: Array<Row> = []
  for (const file of groups) {
    progress(`scale: ${file.slice(0, -3)}`)
    const mod: { default: Group } = await import(`./scale/${file}`)
    rows.push(...(await mod.default()))
  }
  return { name: "scale", machine, rows }
}
