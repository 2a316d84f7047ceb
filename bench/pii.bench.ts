// `pnpm bench pii`: how well the PII scrubber finds what it should (per kind, on the labelled corpus), and
// what it costs against the floor of one regex pass over the same texts.
//
// recall_<kind> / precision_<kind>: exact matches (kind and span) against the corpus's labels
//   (packages/middleware/test/fixtures/pii-corpus.json); texts without labels are hard negatives.
// scrub_throughput_vs_floor: Pii.scrub over every corpus text / one precompiled regex pass
//   (`text.replace(/\S+@\S+/g, "<EMAIL>")`) over the same texts, in the same process. The two alternate
//   round by round (the order flips each round), each round runs PASSES passes; medians of ROUNDS rounds.
import { readFileSync } from "node:fs"
import { Schema } from "effect"
import { Pii } from "@artana/middleware"
import { type BenchResult, median, nowUs, progress, type Row } from "./lib.js"

const ROUNDS = 21
const PASSES = 20

const Corpus = Schema.Struct({
  entries: Schema.Array(Schema.Struct({
    id: Schema.String,
    text: Schema.String,
    spans: Schema.Array(Schema.Struct({ kind: Schema.Literal(...Pii.kinds), start: Schema.Number, end: Schema.Number }))
  }))
})

const FLOOR = /\S+@\S+/g

export default async (machine: BenchResult["machine"]): Promise<BenchResult> => {
  const corpusFile = new URL("../packages/middleware/test/fixtures/pii-corpus.json", import.meta.url)
  const corpus = Schema.decodeUnknownSync(Corpus)(JSON.parse(readFileSync(corpusFile, "utf8")))
  const texts = corpus.entries.map((e) => e.text)
  const chars = texts.reduce((n, t) => n + t.length, 0)
  const baseline = `labelled corpus (${texts.length} texts)`

  progress(`scoring ${texts.length} texts`)
  const counts = new Map<Pii.Kind, { tp: number; fp: number; fn: number }>(Pii.kinds.map((k) => [k, { tp: 0, fp: 0, fn: 0 }]))
  for (const entry of corpus.entries) {
    const expected = new Set(entry.spans.map((s) => `${s.kind}:${s.start}:${s.end}`))
    const findings = Pii.scrub(entry.text).findings
    const actual = new Set(findings.map((f) => `${f.kind}:${f.start}:${f.end}`))
    for (const f of findings) counts.get(f.kind)![expected.has(`${f.kind}:${f.start}:${f.end}`) ? "tp" : "fp"]++
    for (const s of entry.spans) if (!actual.has(`${s.kind}:${s.start}:${s.end}`)) counts.get(s.kind)!.fn++
  }
  const quality: Array<Row> = []
  for (const [kind, c] of counts) {
    const recall = c.tp + c.fn === 0 ? 1 : c.tp / (c.tp + c.fn)
    const precision = c.tp + c.fp === 0 ? 1 : c.tp / (c.tp + c.fp)
    quality.push({ metric: `recall_${kind}`, value: recall, unit: "ratio", baseline, baselineValue: 1, ratio: recall, detail: { found: c.tp, missed: c.fn, labelled: c.tp + c.fn } })
    quality.push({ metric: `precision_${kind}`, value: precision, unit: "ratio", baseline, baselineValue: 1, ratio: precision, detail: { correct: c.tp, false_positives: c.fp, reported: c.tp + c.fp } })
  }

  progress(`scrub_throughput_vs_floor: ${ROUNDS} rounds of ${PASSES} passes over ${chars} characters`)
  let sink = 0
  const scrubPass = () => {
    const t0 = nowUs()
    for (let p = 0; p < PASSES; p++) for (const text of texts) sink += Pii.scrub(text).text.length
    return nowUs() - t0
  }
  const floorPass = () => {
    const t0 = nowUs()
    for (let p = 0; p < PASSES; p++) for (const text of texts) sink += text.replace(FLOOR, "<EMAIL>").length
    return nowUs() - t0
  }
  scrubPass()
  floorPass()
  const scrubTimes: Array<number> = []
  const floorTimes: Array<number> = []
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      scrubTimes.push(scrubPass())
      floorTimes.push(floorPass())
    } else {
      floorTimes.push(floorPass())
      scrubTimes.push(scrubPass())
    }
  }
  if (sink === 0) throw new Error("nothing was scrubbed")
  const scrub = median(scrubTimes)
  const floor = median(floorTimes)
  const mb = (chars * PASSES) / 1e6

  return {
    name: "pii",
    machine,
    rows: [
      ...quality,
      {
        metric: "scrub_throughput_vs_floor",
        value: scrub / floor,
        unit: "ratio",
        baseline: `one precompiled regex pass: text.replace(/\\S+@\\S+/g, "<EMAIL>")`,
        baselineValue: floor,
        ratio: scrub / floor,
        detail: {
          scrub_median_us: scrub,
          floor_median_us: floor,
          scrub_mb_per_s: mb / (scrub / 1e6),
          floor_mb_per_s: mb / (floor / 1e6),
          texts: texts.length,
          chars_per_pass: chars,
          passes_per_round: PASSES,
          rounds: ROUNDS
        }
      }
    ]
  }
}
