/**
 * Runs the detectors and keeps one finding per stretch of text.
 *
 * @internal
 */
import { email, phone } from "./contact.js"
import { card, iban, ssn } from "./financial.js"
import { type Candidate, type Detector, type Kind, rank } from "./kinds.js"
import { ipv4, ipv6 } from "./network.js"
import { awsAccessKey, awsSecretKey, githubToken, jwt, openaiKey, privateKey } from "./secrets.js"

export const detectors: Readonly<Record<Kind, Detector>> = {
  email,
  phone,
  card,
  iban,
  ssn,
  ipv4,
  ipv6,
  openai_key: openaiKey,
  aws_access_key: awsAccessKey,
  aws_secret_key: awsSecretKey,
  github_token: githubToken,
  jwt,
  private_key: privateKey
}

/**
 * Non-overlapping findings in text order. Overlaps go to the higher-ranked kind, then to the longer span,
 * then to the earlier one.
 */
export const detect = (text: string, enabled: ReadonlyArray<Kind>): ReadonlyArray<Candidate> => {
  const candidates: Array<Candidate> = []
  for (const kind of enabled) detectors[kind](text, candidates)
  if (candidates.length <= 1) return candidates
  candidates.sort((a, b) => rank[b.kind] - rank[a.kind] || (b.end - b.start) - (a.end - a.start) || a.start - b.start)
  // Kept spans, in text order and disjoint: a candidate fits if it ends before the first kept span that
  // ends after its start.
  const kept: Array<Candidate> = []
  for (const c of candidates) {
    let lo = 0
    let hi = kept.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (kept[mid]!.end <= c.start) lo = mid + 1
      else hi = mid
    }
    const next = kept[lo]
    if (next === undefined || c.end <= next.start) kept.splice(lo, 0, c)
  }
  return kept
}

/** `text` with each finding (of `enabled` kinds) replaced by what `name` gives it, and the findings with their names. */
export const substitute = (
  text: string,
  enabled: ReadonlyArray<Kind>,
  name: (found: Candidate, value: string) => string
): { readonly text: string; readonly findings: ReadonlyArray<Candidate & { readonly placeholder: string; readonly value: string }> } => {
  const found = detect(text, enabled)
  if (found.length === 0) return { text, findings: [] }
  const findings: Array<Candidate & { readonly placeholder: string; readonly value: string }> = []
  let out = ""
  let last = 0
  for (const c of found) {
    const value = text.slice(c.start, c.end)
    const placeholder = name(c, value)
    out += text.slice(last, c.start) + placeholder
    last = c.end
    findings.push({ ...c, placeholder, value })
  }
  return { text: out + text.slice(last), findings }
}
