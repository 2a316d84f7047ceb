import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { readFileSync } from "node:fs"
import * as Pii from "../src/Pii.js"

// The labelled corpus: realistic texts with every PII span marked; texts without spans are hard negatives.
// `pnpm bench pii` reports the same measures per kind.
const Corpus = Schema.Struct({
  entries: Schema.Array(Schema.Struct({
    id: Schema.String,
    category: Schema.String,
    text: Schema.String,
    spans: Schema.Array(Schema.Struct({
      kind: Schema.Literal(...Pii.kinds),
      start: Schema.Number,
      end: Schema.Number,
      value: Schema.String
    }))
  }))
})

const corpus = Schema.decodeUnknownSync(Corpus)(
  JSON.parse(readFileSync(new URL("./fixtures/pii-corpus.json", import.meta.url), "utf8"))
)

/** Exact matches: a finding counts only with the right kind and the exact span. */
const score = () => {
  const perKind = new Map<Pii.Kind, { tp: number; fp: number; fn: number }>(Pii.kinds.map((k) => [k, { tp: 0, fp: 0, fn: 0 }]))
  const misses: Array<string> = []
  for (const entry of corpus.entries) {
    const expected = new Set(entry.spans.map((s) => `${s.kind}:${s.start}:${s.end}`))
    const findings = Pii.scrub(entry.text).findings
    const actual = new Set(findings.map((f) => `${f.kind}:${f.start}:${f.end}`))
    for (const f of findings) {
      const hit = expected.has(`${f.kind}:${f.start}:${f.end}`)
      perKind.get(f.kind)![hit ? "tp" : "fp"]++
      if (!hit) misses.push(`${entry.id}: false ${f.kind} ${JSON.stringify(f.value)}`)
    }
    for (const s of entry.spans) {
      if (actual.has(`${s.kind}:${s.start}:${s.end}`)) continue
      perKind.get(s.kind)!.fn++
      misses.push(`${entry.id}: missed ${s.kind} ${JSON.stringify(s.value)}`)
    }
  }
  return { perKind, misses }
}

// Measured on this corpus: precision 0.993, recall 0.996 overall; the weakest kinds are ipv4 precision
// (0.96, four-part versions with no version word before them) and phone recall (0.98, an Italian mobile
// without its country code). The thresholds leave a little room and fail on any real regression.
const OVERALL_MIN = 0.98
const PER_KIND_MIN = 0.95

describe("Pii corpus", () => {
  it("has at least 200 texts, spans that match their text, and every kind", () => {
    expect(corpus.entries.length).toBeGreaterThanOrEqual(200)
    expect(new Set(corpus.entries.map((e) => e.id)).size).toBe(corpus.entries.length)
    for (const entry of corpus.entries) {
      for (const span of entry.spans) expect(entry.text.slice(span.start, span.end)).toBe(span.value)
    }
    const kindsPresent = new Set(corpus.entries.flatMap((e) => e.spans.map((s) => s.kind)))
    expect([...kindsPresent].sort()).toEqual([...Pii.kinds].sort())
    expect(corpus.entries.filter((e) => e.spans.length === 0).length).toBeGreaterThanOrEqual(100)
  })

  it(`precision and recall stay >= ${OVERALL_MIN} overall and >= ${PER_KIND_MIN} per kind`, () => {
    const { misses, perKind } = score()
    let tp = 0, fp = 0, fn = 0
    const below: Array<string> = []
    for (const [kind, s] of perKind) {
      tp += s.tp
      fp += s.fp
      fn += s.fn
      const precision = s.tp / Math.max(1, s.tp + s.fp)
      const recall = s.tp / Math.max(1, s.tp + s.fn)
      if (precision < PER_KIND_MIN || recall < PER_KIND_MIN) below.push(`${kind}: precision ${precision.toFixed(3)}, recall ${recall.toFixed(3)}`)
    }
    expect(below, misses.join("\n")).toEqual([])
    expect(tp / (tp + fp), misses.join("\n")).toBeGreaterThanOrEqual(OVERALL_MIN)
    expect(tp / (tp + fn), misses.join("\n")).toBeGreaterThanOrEqual(OVERALL_MIN)
  })

  it("restore(scrub(text)) gives every text back (a value written two ways comes back as first written)", () => {
    let exact = 0
    for (const entry of corpus.entries) {
      const scrubber = Pii.makeScrubber()
      const scrubbed = scrubber.scrub(entry.text)
      let expected = ""
      let last = 0
      for (const f of scrubbed.findings) {
        expected += entry.text.slice(last, f.start) + scrubber.placeholders.get(f.placeholder)
        last = f.end
      }
      expected += entry.text.slice(last)
      const restored = scrubber.restore(scrubbed.text)
      expect(restored, entry.id).toBe(expected)
      if (restored === entry.text) exact++
    }
    // Only chat-034 writes one number two ways ("415 555 0132" and "(415)555-0132").
    expect(exact).toBe(corpus.entries.length - 1)
  })
})
