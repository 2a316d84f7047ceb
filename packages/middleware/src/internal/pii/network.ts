/**
 * IPv4 and IPv6 addresses. Candidates are found by shape; `ipaddr.js` decides what is an address.
 *
 * @internal
 */
import ipaddr from "ipaddr.js"
import { type Detector, notAfter } from "./kinds.js"

/**
 * Four dotted decimals. Not after `v`, `@` or `name-` (`v1.2.3.4`, `pkg@1.2.3.4`, `release-1.2.3.4`) and not
 * before a letter suffix (`1.2.3.4-rc1`): those are versions. The unspecified address `0.0.0.0` (and `::`)
 * names no host and is kept.
 */
const IPV4 = new RegExp(
  notAfter(".@", "\\d") + String.raw`(?<![A-Za-z]-)\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\w]|\.\d|-[A-Za-z])`,
  "g"
)

/**
 * Right after a version word (`version`, `firmware`, `build`, `release`, `<FileVersion>`, `ver=`), a quad
 * whose first number is below 10 is a version: `AssemblyVersion 1.0.0.0`, `firmware 1.0.2.15`. Anything
 * else stays an address even there: "version 192.168.1.1" is 192.168.1.1. Leaking an address costs more
 * than masking a four-part version, and real four-part versions start small.
 */
const VERSION_WORD = /\b(?:version|ver|firmware|fw|build|release|assembly)\s*(?:(?:[:=>(]|["']|is|of)\s*){0,3}$/i
/** A camel-case field: `AssemblyVersion(`, `<FileVersion>`, `productVersion=` (not `server`). */
const VERSION_FIELD = /[a-z]Version\s*(?:(?:[:=>(]|["'])\s*){0,3}$/

const isVersion = (text: string, start: number, quad: string): boolean => {
  if (Number(quad.slice(0, quad.indexOf("."))) >= 10) return false
  const before = text.slice(Math.max(0, start - 32), start)
  return VERSION_WORD.test(before) || VERSION_FIELD.test(before)
}

export const ipv4: Detector = (text, out) => {
  if (!/\d\.\d/.test(text)) return
  for (const m of text.matchAll(IPV4)) {
    // Four-part decimal only: no leading zeros (`01.02.03.04` is a date or a version, not an address).
    if (!ipaddr.IPv4.isValidFourPartDecimal(m[0])) continue
    // The unspecified address (`0.0.0.0:8080`, "listen on all interfaces") names no host.
    if (m[0] === "0.0.0.0" || isVersion(text, m.index, m[0])) continue
    out.push({ kind: "ipv4", start: m.index, end: m.index + m[0].length, key: m[0] })
  }
}

// Hex groups and colons, optionally an embedded IPv4 tail and a zone; never glued to a word or a colon,
// so `std::vector`, `Foo::bar` and the middle of a MAC address or hash are not candidates.
const IPV6 = new RegExp(
  notAfter(":.", "[0-9A-Fa-f:]") +
    String.raw`(?:[0-9A-Fa-f]{0,4}:){2,7}(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f]{0,4})(?:%[A-Za-z0-9_.]+)?(?![\w:]|\.\d)`,
  "g"
)

/**
 * Eight groups, or `::`, or six groups and an IPv4 tail: anything else (a time `14:30:00`, a MAC address) is
 * settled here, without asking the parser (which answers by throwing).
 */
const plausibleShape = (raw: string): boolean => {
  if (raw.includes("::")) return true
  const colons = raw.split(":").length - 1
  return colons === 7 || (colons === 6 && raw.includes("."))
}

export const ipv6: Detector = (text, out) => {
  if (!/[0-9A-Fa-f:]:[0-9A-Fa-f:]/.test(text)) return
  for (const m of text.matchAll(IPV6)) {
    const raw = m[0]
    // A digit is required: `a::b`, `dead::beef` and a bare `::` are code far more often than addresses.
    if (!/\d/.test(raw) || !plausibleShape(raw) || !ipaddr.IPv6.isValid(raw)) continue
    const zone = raw.indexOf("%")
    const address = ipaddr.IPv6.parse(zone === -1 ? raw : raw.slice(0, zone))
    out.push({ kind: "ipv6", start: m.index, end: m.index + raw.length, key: address.toNormalizedString() + (zone === -1 ? "" : raw.slice(zone)) })
  }
}
