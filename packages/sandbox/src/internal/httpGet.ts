// http.get: every hop (the first URL and each redirect) is checked (scheme, credentials, metadata names, the domain
// allowlist, every address the name resolves to) and then connected to the address checked; the timeout is one
// deadline for the whole call; the byte cap counts decoded bytes.
import * as http from "node:http"
import * as https from "node:https"
import * as zlib from "node:zlib"
import type { HttpRule } from "../Policy.js"
import type { Transport } from "../Transport.js"
import { allowedHost, canonicalHost, classify, isAddress, metadataName } from "./netGuard.js"

/** A hop's check: the address to connect to, or why not. */
export type HopDecision =
  | {
    readonly ok: true
    readonly host: string
    readonly address: string
    readonly family: 4 | 6
    /** Every address checked, in the resolver's order (`address` is the first): connections go to these only. */
    readonly addresses?: ReadonlyArray<string> | undefined
  }
  | { readonly ok: false; readonly reason: string }

/** The checks that need no DNS: scheme, credentials, metadata names, the allowlist, a literal address's class. */
export const checkUrlStatic = (rule: HttpRule, url: URL): HopDecision | { readonly ok: true; readonly host: string; readonly literal: boolean } => {
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, reason: `${url.protocol} URLs are not allowed (http and https only)` }
  if (url.username !== "" || url.password !== "") return { ok: false, reason: "URLs with credentials are not allowed" }
  const host = canonicalHost(url.hostname)
  const metadata = metadataName(host)
  if (metadata !== undefined && !rule.allow_metadata) return { ok: false, reason: `${host} is a cloud metadata name (refused unless http.get's allow_metadata is true)` }
  // An address is judged for what it is before the allowlist: listing it does not lift the private block.
  const verdict = isAddress(host) ? classify(host, rule.block_private, rule.allow_metadata) : undefined
  if (verdict !== undefined && !verdict.ok) return { ok: false, reason: verdict.reason }
  if (rule.block_private && (host === "localhost" || host.endsWith(".localhost"))) {
    return { ok: false, reason: `${host} is a loopback name; private networks are blocked (block_private)` }
  }
  if (!allowedHost(host, rule.domains)) return { ok: false, reason: `${host} is not in the allowed domains (${rule.domains.join(", ") || "none"})` }
  return verdict === undefined ? { ok: true, host, literal: false } : { ok: true, host, address: verdict.address, family: verdict.family }
}

/** The whole check of one hop: the static checks, then every address the name resolves to. */
export const checkHop = async (rule: HttpRule, url: URL, transport: Transport): Promise<HopDecision> => {
  const first = checkUrlStatic(rule, url)
  if (!first.ok || "address" in first) return first
  let resolved: ReadonlyArray<{ readonly address: string; readonly family: 4 | 6 }>
  try {
    resolved = await transport.resolve(first.host)
  } catch (e) {
    return { ok: false, reason: `${first.host} does not resolve (${e instanceof Error ? e.message : String(e)})` }
  }
  if (resolved.length === 0) return { ok: false, reason: `${first.host} resolves to no address` }
  const addresses: Array<{ readonly address: string; readonly family: 4 | 6 }> = []
  for (const r of resolved) {
    const verdict = classify(r.address, rule.block_private, rule.allow_metadata)
    if (!verdict.ok) return { ok: false, reason: `${first.host} resolves to ${r.address}: ${verdict.reason}` }
    addresses.push(verdict)
  }
  return { ok: true, host: first.host, address: addresses[0]!.address, family: addresses[0]!.family, addresses: addresses.map((a) => a.address) }
}

/** Errors of a connection that never reached the server: the next checked address may be tried. */
const UNREACHED = new Set(["ECONNREFUSED", "ENETUNREACH", "EHOSTUNREACH", "EADDRNOTAVAIL", "EAFNOSUPPORT"])

export interface Response {
  readonly url: string
  readonly status: number
  readonly contentType: string | undefined
  readonly body: string
  /** Decoded bytes of the body. */
  readonly bytes: number
  /** Every URL fetched, redirects included, in order. */
  readonly hops: ReadonlyArray<{ readonly url: string; readonly host: string; readonly address: string; readonly status: number }>
}

export type Outcome =
  | { readonly _tag: "ok"; readonly response: Response }
  | { readonly _tag: "denied"; readonly reason: string; readonly hops: Response["hops"] }
  | { readonly _tag: "error"; readonly reason: string; readonly hops: Response["hops"] }

const REDIRECTS = new Set([301, 302, 303, 307, 308])

interface Raw {
  readonly status: number
  readonly location: string | undefined
  readonly contentType: string | undefined
  readonly body: Buffer
}

class CapExceeded extends Error {}

/** One GET to the checked address, the body decoded and capped; redirects' bodies are not read. */
const fetchOnce = (url: URL, hop: Extract<HopDecision, { ok: true }>, transport: Transport, maxBytes: number, signal: AbortSignal) =>
  new Promise<Raw>((resolve, reject) => {
    const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
    const target = transport.connectTo(hop.address, port)
    const options: https.RequestOptions = {
      host: target.host,
      port: target.port,
      method: "GET",
      path: `${url.pathname}${url.search}`,
      headers: { host: url.host, "accept-encoding": "gzip, deflate, br", "user-agent": "artana-sandbox/0.1", accept: "*/*" },
      signal,
      // No keep-alive: a pooled socket could be one opened for another check.
      agent: false,
      ...(url.protocol === "https:" && !isAddress(hop.host) ? { servername: hop.host } : {})
    }
    const request = (url.protocol === "https:" ? https : http).request(options, (response) => {
      const status = response.statusCode ?? 0
      const location = typeof response.headers.location === "string" ? response.headers.location : undefined
      const contentType = response.headers["content-type"]
      if (REDIRECTS.has(status) && location !== undefined) {
        response.destroy()
        return resolve({ status, location, contentType, body: Buffer.alloc(0) })
      }
      const encoding = String(response.headers["content-encoding"] ?? "identity").toLowerCase().trim()
      const decoder = encoding === "gzip" || encoding === "x-gzip"
        ? zlib.createGunzip()
        : encoding === "deflate"
        ? zlib.createInflate()
        : encoding === "br"
        ? zlib.createBrotliDecompress()
        : undefined
      if (decoder === undefined && encoding !== "identity") {
        response.destroy()
        return reject(new Error(`unsupported content-encoding ${encoding}`))
      }
      const source = decoder === undefined ? response : response.pipe(decoder)
      const chunks: Array<Buffer> = []
      let total = 0
      source.on("data", (chunk: Buffer) => {
        total += chunk.length
        if (total > maxBytes) {
          response.destroy()
          decoder?.destroy()
          reject(new CapExceeded(`the response is over max_bytes (${maxBytes} bytes, decoded)`))
          return
        }
        chunks.push(chunk)
      })
      source.on("end", () => resolve({ status, location, contentType, body: Buffer.concat(chunks) }))
      source.on("error", (e) => reject(e))
      response.on("error", (e) => reject(e))
    })
    request.on("error", reject)
    request.end()
  })

/** GETs `input` under `rule`, following redirects within the rule, each hop checked; `interrupt` aborts it. Never throws. */
export const get = async (rule: HttpRule, input: string, transport: Transport, interrupt?: AbortSignal): Promise<Outcome> => {
  const hops: Array<Response["hops"][number]> = []
  let url: URL
  try {
    url = new URL(input)
  } catch {
    return { _tag: "denied", reason: `${JSON.stringify(input)} is not an absolute URL`, hops }
  }
  const timeout = AbortSignal.timeout(rule.timeout_ms)
  const signal = interrupt === undefined ? timeout : AbortSignal.any([timeout, interrupt])
  const deadline = new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("deadline")), { once: true }))
  deadline.catch(() => {})
  try {
    for (let redirects = 0; ; redirects++) {
      const hop = await Promise.race([checkHop(rule, url, transport), deadline])
      if (!hop.ok) return { _tag: "denied", reason: redirects === 0 ? hop.reason : `redirect ${redirects} to ${url.href}: ${hop.reason}`, hops }
      // The checked addresses in order: one that cannot be reached (an IPv6 address without an IPv6 route) gives way
      // to the next; none that was not checked is ever tried.
      const candidates = hop.addresses ?? [hop.address]
      let raw: Raw | undefined
      let used = hop.address
      for (const [i, address] of candidates.entries()) {
        try {
          used = address
          raw = await Promise.race([fetchOnce(url, { ...hop, address }, transport, rule.max_bytes, signal), deadline])
          break
        } catch (e) {
          const code = e instanceof Error && "code" in e ? e.code : undefined
          if (i === candidates.length - 1 || typeof code !== "string" || !UNREACHED.has(code) || signal.aborted) throw e
        }
      }
      if (raw === undefined) throw new Error(`${hop.host} cannot be reached`)
      hops.push({ url: url.href, host: hop.host, address: used, status: raw.status })
      if (raw.location === undefined) {
        return {
          _tag: "ok",
          response: { url: url.href, status: raw.status, contentType: raw.contentType, body: raw.body.toString("utf8"), bytes: raw.body.length, hops }
        }
      }
      if (redirects >= rule.max_redirects) return { _tag: "error", reason: `more than ${rule.max_redirects} redirects (max_redirects)`, hops }
      try {
        url = new URL(raw.location, url)
      } catch {
        return { _tag: "error", reason: `redirect to an invalid URL ${JSON.stringify(raw.location)}`, hops }
      }
    }
  } catch (e) {
    if (timeout.aborted) return { _tag: "error", reason: `timed out after ${rule.timeout_ms} ms (timeout_ms, a deadline for the whole call)`, hops }
    if (signal.aborted) return { _tag: "error", reason: "interrupted", hops }
    return { _tag: "error", reason: e instanceof Error ? e.message : String(e), hops }
  }
}
