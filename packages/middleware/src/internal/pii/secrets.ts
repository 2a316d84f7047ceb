/**
 * Credentials: OpenAI keys, AWS keys, GitHub tokens, JWTs, PEM private keys.
 *
 * @internal
 */
import { Buffer } from "node:buffer"
import type { Detector } from "./kinds.js"

/** `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`: random base62 (project keys add `_` and `-`). */
const OPENAI = /(?<![\w-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}(?![\w-])/g

export const openaiKey: Detector = (text, out) => {
  if (text.indexOf("sk-") === -1) return
  for (const m of text.matchAll(OPENAI)) {
    // A random key mixes cases and digits; `sk-learn-tutorial-for-beginners-2024` does not.
    const body = m[0].replace(/^sk-(?:proj-|svcacct-|admin-)?/, "")
    if (!/[a-z]/.test(body) || !/[A-Z]/.test(body) || !/\d/.test(body)) continue
    out.push({ kind: "openai_key", start: m.index, end: m.index + m[0].length, key: m[0] })
  }
}

/** Access key ids of long-term (`AKIA`) and temporary (`ASIA`) credentials. */
const AWS_ACCESS = /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g

export const awsAccessKey: Detector = (text, out) => {
  for (const m of text.matchAll(AWS_ACCESS)) {
    out.push({ kind: "aws_access_key", start: m.index, end: m.index + m[0].length, key: m[0] })
  }
}

/**
 * A secret access key is 40 characters of base64 with nothing to tell it from any other; only the name it
 * is assigned to (`aws_secret_access_key = …`, `"SecretAccessKey": "…"`) marks it.
 */
const AWS_SECRET =
  /(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret_?key)["']?\s*(?:[:=]|=>)\s*["']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])/gi

export const awsSecretKey: Detector = (text, out) => {
  for (const m of text.matchAll(AWS_SECRET)) {
    const value = m[1]!
    // Real secrets mix classes; a run of one letter or a placeholder (`xxxx…`) is not one.
    if (!/[a-z]/.test(value) || !/[A-Z]/.test(value) || !/\d/.test(value)) continue
    const end = m.index + m[0].length
    out.push({ kind: "aws_secret_key", start: end - value.length, end, key: value })
  }
}

/** Classic tokens (`ghp_` personal, `gho_` OAuth, `ghu_` user-to-server, `ghs_` server, `ghr_` refresh) and fine-grained PATs. */
const GITHUB = /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,251}|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])/g

export const githubToken: Detector = (text, out) => {
  if (text.indexOf("gh") === -1 && text.indexOf("github_pat_") === -1) return
  for (const m of text.matchAll(GITHUB)) {
    out.push({ kind: "github_token", start: m.index, end: m.index + m[0].length, key: m[0] })
  }
}

// Three base64url segments; a JSON header starts `{"` or `{ ` and so encodes to `ey`.
const JWT = /(?<![A-Za-z0-9_-])ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*(?![A-Za-z0-9_-]|\.[A-Za-z0-9_-])/g

/** The header decodes to a JSON object naming its algorithm. */
const jwtHeader = (segment: string): boolean => {
  try {
    const header: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"))
    return typeof header === "object" && header !== null && "alg" in header && typeof header.alg === "string"
  } catch {
    return false
  }
}

export const jwt: Detector = (text, out) => {
  if (text.indexOf("ey") === -1) return
  for (const m of text.matchAll(JWT)) {
    if (!jwtHeader(m[0].slice(0, m[0].indexOf(".")))) continue
    out.push({ kind: "jwt", start: m.index, end: m.index + m[0].length, key: m[0] })
  }
}

const PEM_BEGIN = /-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----/g
// A block cut off before its END (a truncated log line): the header, then lines of base64 and PEM headers;
// `\n` escapes (a key pasted into JSON or an env file) count as line breaks.
const PEM_BODY = /(?:(?:\r?\n|(?:\\r)?\\n)(?:[A-Za-z0-9+/=]+|(?:Proc-Type|DEK-Info|Comment|Version):[^\n\\]*))*/y

/** A whole block from BEGIN to the END naming the same type, or, without an END, the header and its body. */
export const privateKey: Detector = (text, out) => {
  if (text.indexOf("-----BEGIN ") === -1) return
  // Where each END marker was last found: one forward search per marker keeps many BEGINs linear.
  const ends = new Map<string, number>()
  let covered = 0
  for (const m of text.matchAll(PEM_BEGIN)) {
    if (m.index < covered) continue
    const marker = `-----END ${m[1]!}-----`
    let at = ends.get(marker)
    if (at === undefined || (at !== -1 && at < m.index)) {
      at = text.indexOf(marker, m.index)
      ends.set(marker, at)
    }
    let end: number
    if (at === -1) {
      PEM_BODY.lastIndex = m.index + m[0].length
      end = PEM_BODY.exec(text) === null ? m.index + m[0].length : PEM_BODY.lastIndex
    } else {
      end = at + marker.length
    }
    covered = end
    const value = text.slice(m.index, end)
    out.push({ kind: "private_key", start: m.index, end, key: value.replace(/\s|\\[nr]/g, "") })
  }
}
