/**
 * Email addresses and phone numbers.
 *
 * @internal
 */
import { type Candidate, type Detector, notAfter } from "./kinds.js"

// ------------------------------------------------------------------------------------------------ email

const EMAIL = new RegExp(
  notAfter(".%+\\-", "[A-Za-z0-9]") +
    String.raw`[A-Za-z0-9](?:[A-Za-z0-9._%+'\-]{0,62}[A-Za-z0-9_%+\-])?@` +
    String.raw`(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+([A-Za-z]{2,24})(?![A-Za-z0-9\-]|\.[A-Za-z0-9])`,
  "g"
)

/** "Top-level domains" that are file extensions: `icon@2x.png`, `logo@3x.webp` are asset names. */
const FILE_EXTENSIONS = new Set([
  "png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "ico", "bmp", "tif", "tiff", "pdf", "js", "mjs", "cjs", "ts",
  "tsx", "jsx", "css", "scss", "json", "yml", "yaml", "toml", "lock", "html", "htm", "txt", "wasm", "mp4", "mp3"
])

export const email: Detector = (text, out) => {
  if (text.indexOf("@") === -1) return
  for (const m of text.matchAll(EMAIL)) {
    let start = m.index
    const end = start + m[0].length
    if (FILE_EXTENSIONS.has(m[1]!.toLowerCase())) continue
    // `git@github.com:org/repo.git` is an SSH remote, not a person's address.
    if (text[end] === ":" && /[\w~/]/.test(text[end + 1] ?? "")) continue
    // `ssh://git@host/…`, `https://user@host`: the user part of a URL.
    if (text.slice(Math.max(0, start - 2), start) === "//") continue
    // A `\n` escape written into plain text ("...:\nbob@x.com") is not part of the address.
    if (text[start - 1] === "\\" && /[nrt]/.test(text[start]!)) start++
    out.push({ kind: "email", start, end, key: text.slice(start, end).toLowerCase() })
  }
}

// ------------------------------------------------------------------------------------------------ phone

// Ends a number: no letter, slash or dash right after, no `.5` / `,5` (a decimal or a longer dotted run).
const END = String.raw`(?![\w/]|[.,\-]\d)`
// Starts a number: not right after another group of digits (the tail of an account number or an IBAN).
const NOT_IN_RUN = String.raw`(?<!\d[ .\-])`

/** `+44 20 7946 0958`, `+1 (415) 555-0132`, `(+33) 6 12 34 56 78`, `0044 20 7946 0958`, `+14155550132`. */
const INTERNATIONAL = new RegExp(
  notAfter("+\\-./", "[(+0]") + NOT_IN_RUN +
    String.raw`(?:\(\+[1-9]\d{0,2}\)|\+[1-9]\d{0,2}|00[1-9]\d{0,2}(?=[ .\-(]))(?:[ .\-]?\(0\))?(?:[ .\-]?(?:\(\d{1,5}\)|\d{1,12})){1,6}` +
    END,
  "g"
)

/** North American numbers: `(415) 555-0132`, `415-555-0132`, `415.555.0132`, `1-800-555-0199`. */
const NANP = new RegExp(
  notAfter("+\\-./", "[\\d(]") + NOT_IN_RUN +
    String.raw`(?:1[ .\-]?)?(?:\([2-9]\d{2}\)[ .\-]?|[2-9]\d{2}([ .\-]))[2-9]\d{2}(?:\1|-)\d{4}` +
    END,
  "g"
)

/**
 * National numbers with a trunk 0 and one separator throughout: `020 7946 0958`, `06 12 34 56 78`,
 * `030-12345678`, `07700 900123`. Ten or eleven digits: dates (`03.15.2024`) and zip+4 codes have fewer.
 */
const TRUNK = new RegExp(
  notAfter("+\\-./", "0") + NOT_IN_RUN + String.raw`0\d{1,4}([ .\-])\d{2,8}(?:\1\d{2,8}){0,3}(?![\w/]|[.,\-]\d|\1\d)`,
  "g"
)

/** Shapes accepted only right after a word saying a phone number follows: `555-0132`, `4155550132`. */
const CONTEXTUAL = new RegExp(notAfter("+\\-./#", "[\\d+]") + NOT_IN_RUN + String.raw`(?:[2-9]\d{2}[ .\-]\d{4}|\+?\d{7,15})` + END, "g")
const PHONE_WORD =
  /\b(?:phone|tel|telephone|mobile|cell|cellphone|fax|whatsapp|sms|landline|hotline|call (?:me|us|him|her|them)|text (?:me|us)|reach (?:me|us)|ph|mob)\.?\s*(?:(?:#|no\.?|number|nr\.?|is|at|on|:|-|=|\()\s*){0,3}$/i

const digitsOf = (s: string): string => s.replace(/\D/g, "")

const push = (out: Array<Candidate>, start: number, end: number, key: string) => {
  out.push({ kind: "phone", start, end, key })
}

export const phone: Detector = (text, out) => {
  if (!/\d{2}/.test(text)) return
  for (const m of text.matchAll(INTERNATIONAL)) {
    const raw = m[0]
    const body = raw.replace(/^\(?(?:\+|00)/, "")
    const digits = digitsOf(body)
    if (digits.length < 9 || digits.length > 15) continue
    push(out, m.index, m.index + raw.length, `+${digits}`)
  }
  for (const m of text.matchAll(NANP)) {
    const digits = digitsOf(m[0])
    push(out, m.index, m.index + m[0].length, `+1${digits.length === 11 ? digits.slice(1) : digits}`)
  }
  for (const m of text.matchAll(TRUNK)) {
    const digits = digitsOf(m[0])
    if (digits.length < 10 || digits.length > 11) continue
    push(out, m.index, m.index + m[0].length, digits)
  }
  for (const m of text.matchAll(CONTEXTUAL)) {
    if (!PHONE_WORD.test(text.slice(Math.max(0, m.index - 32), m.index))) continue
    const digits = digitsOf(m[0])
    push(out, m.index, m.index + m[0].length, m[0].startsWith("+") ? `+${digits}` : digits)
  }
}
