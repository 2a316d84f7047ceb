/**
 * Payment cards (Luhn), IBANs (mod 97) and US social security numbers.
 *
 * @internal
 */
import { ibanChecksum, ibanLength, luhn } from "./checksums.js"
import { type Detector, notAfter } from "./kinds.js"

// ------------------------------------------------------------------------------------------------- card

// 13 to 19 digits, single spaces or dashes between them; not part of a longer run of digit groups.
const CARD = new RegExp(
  notAfter("\\-.,", "\\d") + String.raw`(?<!\d[ \-])\d(?:[ \-]?\d){12,18}(?![\w\-]|[ \-]\d|[.,]\d)`,
  "g"
)

/** Groups as cards are printed: 4-4-4-4(-1..3), Amex 4-6-5, Diners 4-6-4; or no separator at all. */
const plausibleGroups = (raw: string): boolean => {
  const groups = raw.split(/[ -]/)
  if (groups.length === 1) return true
  const separators = raw.replace(/\d/g, "")
  if (new Set(separators).size !== 1) return false
  const sizes = groups.map((g) => g.length)
  if (sizes.length === 3 && sizes[0] === 4 && sizes[1] === 6 && (sizes[2] === 4 || sizes[2] === 5)) return true
  const last = sizes[sizes.length - 1]!
  return sizes.slice(0, -1).every((s) => s === 4) && last >= 1 && last <= 4
}

/** Issuer prefixes in use (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro, Mir). */
const plausibleIssuer = (digits: string): boolean => {
  const two = Number(digits.slice(0, 2))
  const four = Number(digits.slice(0, 4))
  switch (digits[0]) {
    case "2":
      return (four >= 2200 && four <= 2204) || (four >= 2221 && four <= 2720)
    case "3":
      return two === 34 || two === 37 || two === 35 || two === 36 || two === 38 || two === 39 || (four >= 3000 && four <= 3059)
    case "4":
      return true
    case "5":
      return two >= 50 && two <= 59
    case "6":
      return true
    default:
      return false
  }
}

export const card: Detector = (text, out) => {
  for (const m of text.matchAll(CARD)) {
    const raw = m[0]
    const digits = raw.replace(/\D/g, "")
    if (!plausibleGroups(raw) || !plausibleIssuer(digits) || !luhn(digits)) continue
    out.push({ kind: "card", start: m.index, end: m.index + raw.length, key: digits })
  }
}

// ------------------------------------------------------------------------------------------------- iban

// Upper case as printed; lower case as people type it ("gb29 nwbk …"): the checksum decides either way.
const IBAN_START = new RegExp(notAfter("", "[A-Za-z]") + String.raw`[A-Za-z]{2}\d{2}(?=[ ]?[A-Za-z0-9])`, "g")

const isAlnum = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9]/.test(c)

/**
 * Reads exactly the country's length of characters (single spaces allowed between them, as IBANs are
 * printed in groups of four), then requires the run to end there and the checksum to hold.
 */
export const iban: Detector = (text, out) => {
  for (const m of text.matchAll(IBAN_START)) {
    const length = ibanLength[m[0].slice(0, 2).toUpperCase()]
    if (length === undefined) continue
    let compact = ""
    let i = m.index
    while (i < text.length && compact.length < length) {
      const c = text[i]!
      if (/[A-Za-z0-9]/.test(c)) {
        compact += c.toUpperCase()
        i++
      } else if (c === " " && compact.length >= 4 && /[A-Za-z0-9]/.test(text[i + 1] ?? "")) {
        i++
      } else {
        break
      }
    }
    if (compact.length !== length || isAlnum(text[i]) || !ibanChecksum(compact)) continue
    out.push({ kind: "iban", start: m.index, end: i, key: compact })
  }
}

// -------------------------------------------------------------------------------------------------- ssn

const SSN = new RegExp(notAfter("\\-./", "\\d") + String.raw`(\d{3})-(\d{2})-(\d{4})(?![\w\-]|[./]\d)`, "g")
const SSN_SPACED = new RegExp(notAfter("\\-./", "\\d") + String.raw`(\d{3}) (\d{2}) (\d{4})(?![\w\-]|[./ ]\d)`, "g")
const SSN_WORD = /\b(?:ssn|social security(?: number| no\.?)?|ss#)\s*(?:(?:#|no\.?|number|is|:|-|=)\s*){0,3}$/i

/** Areas 000, 666 and 900-999, group 00 and serial 0000 are never issued. */
const issuable = (area: string, group: string, serial: string): boolean =>
  area !== "000" && area !== "666" && area[0] !== "9" && group !== "00" && serial !== "0000"

export const ssn: Detector = (text, out) => {
  if (!/\d{3}[ -]\d{2}[ -]\d{4}/.test(text)) return
  for (const m of text.matchAll(SSN)) {
    if (!issuable(m[1]!, m[2]!, m[3]!)) continue
    out.push({ kind: "ssn", start: m.index, end: m.index + m[0].length, key: m[1]! + m[2]! + m[3]! })
  }
  // Space-separated only where the text says it is one: "SSN: 123 45 6789".
  for (const m of text.matchAll(SSN_SPACED)) {
    if (!issuable(m[1]!, m[2]!, m[3]!) || !SSN_WORD.test(text.slice(Math.max(0, m.index - 32), m.index))) continue
    out.push({ kind: "ssn", start: m.index, end: m.index + m[0].length, key: m[1]! + m[2]! + m[3]! })
  }
}
