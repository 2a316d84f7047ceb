// Addresses and hosts for http.get: every address is classified as what it really is, with ipaddr.js (which
// parses every IPv4 spelling: dotted decimal, octal and hex parts, short forms, a 32-bit integer), and IPv6
// addresses that embed an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) are judged by the IPv4 address
// too. Only global unicast passes the private block; cloud metadata addresses and names never pass.
import ipaddr from "ipaddr.js"
import { domainToASCII } from "node:url"

/**
 * Cloud metadata and host endpoints, refused unless the policy opts in (`allow_metadata: true`): each major cloud's
 * documented instance metadata service, and the host agents reachable from an instance.
 */
const METADATA_ADDRESSES = new Set([
  "169.254.169.254", // AWS, GCP, Azure IMDS, Oracle, OpenStack, DigitalOcean, Hetzner, Linode, Huawei, IBM, Scaleway
  "169.254.169.123", // AWS Time Sync
  "169.254.169.253", // AWS DNS resolver
  "169.254.170.2", // AWS ECS task metadata and credentials
  "169.254.170.23", // AWS EKS Pod Identity agent
  "fd00:ec2::254", // AWS IMDS (IPv6)
  "fd00:ec2::23", // AWS EKS Pod Identity agent (IPv6)
  "fd00:ec2::123", // AWS Time Sync (IPv6)
  "fd20:ce::254", // GCP metadata server (IPv6)
  "168.63.129.16", // Azure WireServer (host agent, health probes, DNS): public unicast, so named here
  "100.100.100.200", // Alibaba Cloud
  "169.254.0.23", // Tencent Cloud
  "192.0.0.192", // Oracle Cloud (legacy)
  "169.254.42.42" // Scaleway
])

const METADATA_NAMES = [
  "metadata.google.internal",
  "metadata.goog",
  "metadata",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.azure.com",
  "metadata.azure.internal",
  "metadata.tencentyun.com",
  "metadata.platformequinix.com",
  "api.metadata.cloud.ibm.com",
  "metadata.oraclecloud.com",
  "metadata.packet.net"
]

/** A host name in canonical form: lower case, without a trailing dot or IPv6 brackets. */
export const canonicalHost = (host: string): string => host.toLowerCase().replace(/\.+$/, "").replace(/^\[(.*)\]$/, "$1")

/** Why a name is a cloud metadata name, or undefined. */
export const metadataName = (host: string): string | undefined => {
  const h = canonicalHost(host)
  return METADATA_NAMES.find((name) => h === name || h.endsWith(`.${name}`))
}

/** The IPv4 address an IPv6 address carries, by the standard embeddings, or undefined. */
const embeddedIPv4 = (address: ipaddr.IPv6): { readonly v4: ipaddr.IPv4; readonly how: string } | undefined => {
  const bytes = address.toByteArray()
  const v4 = (offset: number, xor = 0) =>
    new ipaddr.IPv4([(bytes[offset]! ^ xor) & 255, (bytes[offset + 1]! ^ xor) & 255, (bytes[offset + 2]! ^ xor) & 255, (bytes[offset + 3]! ^ xor) & 255])
  if (address.isIPv4MappedAddress()) return { v4: address.toIPv4Address(), how: "IPv4-mapped" }
  const range = address.range()
  if (range === "rfc6052" || address.match(ipaddr.IPv6.parse("64:ff9b:1::"), 48)) return { v4: v4(12), how: "NAT64" }
  if (range === "6to4") return { v4: v4(2), how: "6to4" }
  if (range === "teredo") return { v4: v4(12, 0xff), how: "Teredo" }
  // ::a.b.c.d, IPv4-compatible (deprecated): the first 96 bits zero, but not :: or ::1.
  if (bytes.slice(0, 12).every((b) => b === 0) && !(bytes.slice(12, 15).every((b) => b === 0) && bytes[15]! <= 1)) {
    return { v4: v4(12), how: "IPv4-compatible" }
  }
  return undefined
}

/** An address as the policy sees it. */
export type Verdict =
  | { readonly ok: true; readonly address: string; readonly family: 4 | 6 }
  | { readonly ok: false; readonly reason: string }

/** Whether a string is an IP address in any spelling ipaddr.js knows (including `127.1`, `0x7f000001`, `2130706433`). */
export const isAddress = (text: string): boolean => ipaddr.isValid(canonicalHost(text))

/**
 * Classifies an address: refused when it is a cloud metadata address (always), or, with `blockPrivate`, anything
 * but global unicast (loopback, private, link-local, shared, reserved, multicast, unspecified, documentation,
 * benchmarking...), judged by the IPv4 address an IPv6 address embeds as well.
 */
export const classify = (text: string, blockPrivate: boolean, allowMetadata = false): Verdict => {
  const raw = canonicalHost(text)
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.parse(raw)
  } catch {
    return { ok: false, reason: `${text} is not an IP address` }
  }
  const normal = parsed.toNormalizedString()
  // The IPv4 address an IPv6 address carries is judged first: it says what the address really reaches.
  const checks: Array<{ readonly address: ipaddr.IPv4 | ipaddr.IPv6; readonly label: string }> = []
  if (parsed.kind() === "ipv6") {
    const embedded = embeddedIPv4(parsed as ipaddr.IPv6)
    if (embedded !== undefined) checks.push({ address: embedded.v4, label: `${embedded.v4.toString()} (${embedded.how} in ${text})` })
  }
  checks.push({ address: parsed, label: normal === raw ? raw : `${normal} (${text})` })
  for (const { address, label } of checks) {
    const canonical = address.kind() === "ipv6" ? (address as ipaddr.IPv6).toNormalizedString() : address.toString()
    const compact = address.kind() === "ipv6" ? address.toString() : canonical
    if (!allowMetadata && (METADATA_ADDRESSES.has(canonical) || METADATA_ADDRESSES.has(compact))) {
      return { ok: false, reason: `${label} is a cloud metadata address (refused unless http.get's allow_metadata is true)` }
    }
    const range = address.range()
    if (blockPrivate && range !== "unicast") return { ok: false, reason: `${label} is in the ${range} range, not public; private networks are blocked (block_private)` }
  }
  return { ok: true, address: parsed.toString(), family: parsed.kind() === "ipv6" ? 6 : 4 }
}

/**
 * A domain entry of the allowlist in canonical form (lower case, no trailing dot, IDNA: `bücher.de` is
 * `xn--bcher-kva.de`, as a URL's host is), or undefined when it is not a host name, a `*.` wildcard of one, or an
 * IP address.
 */
export const canonicalDomain = (entry: string): string | undefined => {
  const bare = canonicalHost(entry.trim())
  if (ipaddr.isValid(bare)) return bare
  const wildcard = bare.startsWith("*.")
  const ascii = domainToASCII(wildcard ? bare.slice(2) : bare).replace(/\.+$/, "")
  if (ascii === "" || ascii.includes("*") || !/^[a-z0-9_.-]+$/.test(ascii) || ascii.startsWith(".") || ascii.includes("..")) return undefined
  return wildcard ? `*.${ascii}` : ascii
}

/**
 * Whether the allowlist admits `host`: exact names, and `*.example.org` for the subdomains of example.org (not
 * example.org itself). Comparison is of canonical names; an address is admitted only if listed as written.
 */
export const allowedHost = (host: string, domains: ReadonlyArray<string>): boolean => {
  const h = canonicalHost(host)
  return domains.some((entry) => {
    const d = canonicalDomain(entry)
    if (d === undefined) return false
    if (d.startsWith("*.")) {
      const suffix = d.slice(1)
      return h.endsWith(suffix) && h.length > suffix.length
    }
    return h === d
  })
}
