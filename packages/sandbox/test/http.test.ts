// http.get policy cases: every spelling of private and metadata addresses, the exact-host allowlist, and real
// requests to a local server that plays public hosts (the transport maps their public addresses to it, while the
// policy checks the public ones): redirects re-checked, names resolving to private addresses, the total deadline,
// the byte cap on decoded bytes.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Either } from "effect"
import type { Policy} from "@artana/sandbox";
import { Sandbox, Transport } from "@artana/sandbox"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as zlib from "node:zlib"
import { context } from "./fixtures.js"


const rule = (over: Partial<Policy.HttpRule> = {}): Policy.HttpRule => ({
  allow: true,
  domains: ["example.com", "*.example.org", "api.example.net", "bücher.example", "93.184.216.34", "127.0.0.1", "localhost", "rebind.example.com", "multi.example.com", "metadata.google.internal"],
  block_private: true,
  max_bytes: 1024,
  timeout_ms: 2000,
  max_redirects: 3,
  allow_metadata: false,
  ...over
})
const policyOf = (r: Policy.HttpRule): Policy.Policy => ({ baseDir: "/tmp", document: { default: "deny", tools: { "http.get": r } } })

describe("addresses in every spelling (block_private)", () => {
  const p = policyOf(rule())
  const url = (host: string) => Sandbox.decide(p, "http.get", { url: `http://${host}/` })
  it.each([
    ["dotted loopback", "127.0.0.1", "loopback"],
    ["short form", "127.1", "loopback"],
    ["decimal integer", "2130706433", "loopback"],
    ["hex integer", "0x7f000001", "loopback"],
    ["hex parts", "0x7f.0x0.0x0.0x1", "loopback"],
    ["octal parts", "0177.0.0.01", "loopback"],
    ["mixed short hex", "0x7f.1", "loopback"],
    ["localhost, although listed", "localhost", "loopback name"],
    ["a subdomain of localhost", "api.localhost", "loopback name"],
    ["private 10/8 in hex", "0xa000001", "private"],
    ["private 192.168 in octal", "0300.0250.0.1", "private"],
    ["unspecified", "0.0.0.0", "unspecified"],
    ["zero as an integer", "0", "unspecified"],
    ["IPv6 loopback", "[::1]", "loopback"],
    ["IPv4-mapped loopback", "[::ffff:127.0.0.1]", "loopback"],
    ["IPv4-mapped in hex", "[::ffff:7f00:1]", "loopback"],
    ["IPv4-mapped metadata", "[::ffff:169.254.169.254]", "metadata"],
    ["NAT64 of loopback", "[64:ff9b::7f00:1]", "NAT64"],
    ["NAT64 of private", "[64:ff9b::a00:1]", "private"],
    ["6to4 of loopback", "[2002:7f00:1::]", "6to4"],
    ["Teredo of a private address", "[2001:0:4136:e378:8000:63bf:f5ff:fffe]", "Teredo"],
    ["IPv6 unique local", "[fd12:3456::1]", "uniqueLocal"],
    ["IPv6 link-local", "[fe80::1]", "linkLocal"],
    ["metadata", "169.254.169.254", "metadata"],
    ["metadata as an integer", "2852039166", "metadata"],
    ["metadata in hex", "0xa9fea9fe", "metadata"],
    ["AWS IPv6 metadata", "[fd00:ec2::254]", "metadata"],
    ["Alibaba metadata", "100.100.100.200", "metadata"],
    ["carrier-grade NAT", "100.64.0.1", "carrierGradeNat"],
    ["benchmarking", "198.18.0.1", "reserved"],
    ["documentation IPv6", "[2001:db8::1]", "reserved"],
    ["multicast", "224.0.0.1", "multicast"],
    ["broadcast", "255.255.255.255", "broadcast"],
    ["octal as one integer", "017700000001", "loopback"],
    ["zero-padded parts", "127.000.000.001", "loopback"],
    ["hex and decimal parts mixed", "0x7f.0.0.0x1", "loopback"],
    ["percent-encoded in the host", "%31%32%37.0.0.1", "loopback"],
    ["full-width digits", "１２７.０.０.１", "loopback"],
    ["a trailing dot", "127.0.0.1.", "loopback"],
    ["upper-case localhost with a trailing dot", "LOCALHOST.", "loopback name"],
    ["IPv4-compatible loopback", "[::127.0.0.1]", "loopback"],
    ["IPv4-mapped, fully written", "[0:0:0:0:0:ffff:127.0.0.1]", "loopback"],
    ["IPv6 unspecified", "[::]", "unspecified"],
    ["NAT64 local-use prefix of private", "[64:ff9b:1::a00:1]", "private"],
    ["private 172.16/12 as an integer", "2886729729", "private"],
    ["link-local", "169.254.1.1", "linkLocal"],
    ["this network", "0.1.2.3", "unspecified"]
  ])("%s (%s) is refused", (_what, host, reason) => {
    const decision = url(host)
    expect(decision.ok).toBe(false)
    expect(decision.reason).toContain(reason)
  })

  const open = policyOf(rule({ block_private: false, domains: ["*.example.com", "metadata.google.internal"] }))
  it.each([
    ["IPv4-mapped in hex", "[::ffff:a9fe:a9fe]"],
    ["NAT64", "[64:ff9b::a9fe:a9fe]"],
    ["6to4", "[2002:a9fe:a9fe::]"],
    ["decimal", "2852039166"],
    ["octal parts", "0251.0376.0251.0376"],
    ["a short form", "169.254.43518"],
    ["ECS task metadata", "169.254.170.2"],
    ["Azure/AWS name, upper case with a trailing dot", "METADATA.GOOGLE.INTERNAL."],
    ["a subdomain of a metadata name", "x.metadata.google.internal"]
  ])("metadata as %s (%s) is refused even with block_private: false", (_what, host) => {
    expect(Sandbox.decide(open, "http.get", { url: `http://${host}/latest/meta-data/` })).toMatchObject({ ok: false, reason: expect.stringContaining("metadata") })
  })

  it("the private block cannot be bypassed by listing an address: 127.0.0.1 is listed, and refused", () => {
    expect(url("127.0.0.1")).toMatchObject({ ok: false, reason: expect.stringContaining("loopback") })
  })

  it("a listed public address passes; metadata is refused even with block_private: false", () => {
    expect(url("93.184.216.34").ok).toBe(true)
    const open = policyOf(rule({ block_private: false, domains: ["169.254.169.254", "127.0.0.1", "metadata.google.internal"] }))
    expect(Sandbox.decide(open, "http.get", { url: "http://127.0.0.1/" }).ok).toBe(true)
    expect(Sandbox.decide(open, "http.get", { url: "http://169.254.169.254/latest/meta-data/" })).toMatchObject({ ok: false, reason: expect.stringContaining("metadata") })
    expect(Sandbox.decide(open, "http.get", { url: "http://metadata.google.internal/computeMetadata/v1/" })).toMatchObject({ ok: false, reason: expect.stringContaining("cloud metadata name") })
  })
})

describe("the domain allowlist", () => {
  const p = policyOf(rule())
  const decide = (u: string) => Sandbox.decide(p, "http.get", { url: u })
  it.each([
    ["an exact host", "https://example.com/x", true, "example.com is an allowed domain"],
    ["upper case and a trailing dot", "https://EXAMPLE.com./x", true, "example.com"],
    ["a subdomain of an exact host", "https://www.example.com/", false, "not in the allowed domains"],
    ["a wildcard subdomain", "https://a.example.org/", true, "a.example.org"],
    ["a deep wildcard subdomain", "https://a.b.example.org/", true, "a.b.example.org"],
    ["the wildcard's apex", "https://example.org/", false, "not in the allowed domains"],
    ["a suffix that is not a subdomain", "https://evil-example.org/", false, "not in the allowed domains"],
    ["a look-alike with the allowed name as a subdomain", "https://example.com.evil.net/", false, "not in the allowed domains"],
    ["credentials before another host", "https://example.com@evil.net/", false, "credentials"],
    ["credentials on an allowed host", "https://user:pw@example.com/", false, "credentials"],
    ["a file URL", "file:///etc/passwd", false, "file: URLs are not allowed"],
    ["a gopher URL", "gopher://example.com/", false, "gopher: URLs are not allowed"],
    ["a relative URL", "/etc/passwd", false, "not an absolute URL"],
    ["a metadata name", "http://metadata.google.internal/", false, "cloud metadata name"],
    ["a punycode look-alike", "https://xn--exmple-cua.com/", false, "not in the allowed domains"],
    ["an IDN host listed in Unicode", "https://bücher.example/", true, "xn--bcher-kva.example"],
    ["an IDN host in punycode, listed in Unicode", "https://xn--bcher-kva.example/", true, "xn--bcher-kva.example"],
    ["a host with a port", "https://example.com:8443/x", true, "example.com is an allowed domain"],
    ["a backslash that WHATWG reads as a slash", "https:\\\\evil.net\\@example.com/", false, "not in the allowed domains"]
  ])("%s: %s", (_what, u, ok, reason) => {
    const decision = decide(u)
    expect(decision.ok).toBe(ok)
    expect(decision.reason).toContain(reason)
  })
})

// --- against a local server ------------------------------------------------------------------------------------

let server: http.Server
let port = 0
/** Requests the server got, by path; and the connections of `/hang...` requests it saw closed, by path. */
const requests = new Map<string, number>()
const closed = new Map<string, number>()
const bump = (counts: Map<string, number>, url: string) => void counts.set(url, (counts.get(url) ?? 0) + 1)
beforeAll(async () => {
  server = http.createServer((req, res) => {
    const host = String(req.headers.host).split(":")[0]
    const url = req.url ?? "/"
    if (url === "/hello") return void res.end(`hello from ${host}`)
    if (url === "/to-allowed") return void res.writeHead(302, { location: "https://a.example.org/hello" }).end()
    if (url === "/to-relative") return void res.writeHead(301, { location: "/hello" }).end()
    if (url === "/to-private-name") return void res.writeHead(302, { location: "http://rebind.example.com/hello" }).end()
    if (url === "/to-metadata") return void res.writeHead(307, { location: "http://169.254.169.254/latest/meta-data/" }).end()
    if (url === "/to-decimal-loopback") return void res.writeHead(307, { location: "http://2130706433/" }).end()
    if (url === "/to-mapped") return void res.writeHead(307, { location: "http://[::ffff:127.0.0.1]/" }).end()
    if (url === "/to-other-domain") return void res.writeHead(302, { location: "https://evil.net/hello" }).end()
    if (url === "/to-file") return void res.writeHead(302, { location: "file:///etc/passwd" }).end()
    if (url === "/loop") return void res.writeHead(302, { location: "/loop" }).end()
    bump(requests, url)
    if (url === "/slow-redirect") return void setTimeout(() => res.writeHead(302, { location: "/slow-redirect" }).end(), 400)
    if (url.startsWith("/hang")) return void req.socket.once("close", () => bump(closed, url))
    if (url === "/gzip-bomb") {
      res.writeHead(200, { "content-encoding": "gzip" })
      return void res.end(zlib.gzipSync(Buffer.alloc(200_000, "a")))
    }
    if (url === "/gzip-small") {
      res.writeHead(200, { "content-encoding": "gzip" })
      return void res.end(zlib.gzipSync(Buffer.from("compressed hello")))
    }
    if (url === "/big") return void res.end("b".repeat(5000))
    res.writeHead(404).end("not found")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as AddressInfo).port
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const hosts = {
  "example.com": ["93.184.216.34"],
  "a.example.org": ["93.184.216.35"],
  "api.example.net": ["2606:2800:220:1:248:1893:25c8:1946"],
  "rebind.example.com": ["127.0.0.1"],
  "multi.example.com": ["93.184.216.36", "10.0.0.5"]
}

const get = async (url: string, over: Partial<Policy.HttpRule> = {}) => {
  const transport = Transport.fake(hosts, { host: "127.0.0.1", port })
  const tools = Sandbox.tools(policyOf(rule(over)), transport)
  const tool = tools.find((t) => t.name === "http.get")!
  const outcome = await Effect.runPromise(Effect.either(tool.invoke({ url }, context)))
  return Either.isRight(outcome) ? { ok: true as const, value: outcome.right as { readonly body: string; readonly url: string; readonly hops: ReadonlyArray<{ readonly host: string; readonly address: string }> } } : { ok: false as const, tag: outcome.left._tag, message: outcome.left.message }
}

describe("http.get against a server playing public hosts", () => {
  it("fetches an allowed host, connecting to the address it checked", async () => {
    const result = await get("http://example.com/hello")
    expect(result).toMatchObject({ ok: true, value: { body: "hello from example.com", hops: [{ host: "example.com", address: "93.184.216.34" }] } })
  })

  it("an allowed name resolving to a public IPv6 address passes", async () => {
    expect(await get("http://api.example.net/hello")).toMatchObject({ ok: true, value: { body: "hello from api.example.net" } })
  })

  it("follows a redirect to another allowed host, and a relative one, checking each", async () => {
    expect(await get("http://example.com/to-relative")).toMatchObject({ ok: true, value: { url: "http://example.com/hello" } })
  })

  it.each([
    ["a name that resolves to loopback (DNS rebinding)", "http://rebind.example.com/hello", "resolves to 127.0.0.1"],
    ["a name with one public and one private address", "http://multi.example.com/hello", "resolves to 10.0.0.5"],
    ["a redirect to a name resolving to loopback", "http://example.com/to-private-name", "redirect 1 to http://rebind.example.com/hello"],
    ["a redirect to the metadata address", "http://example.com/to-metadata", "cloud metadata"],
    ["a redirect to loopback as a decimal integer", "http://example.com/to-decimal-loopback", "loopback"],
    ["a redirect to IPv4-mapped loopback", "http://example.com/to-mapped", "loopback"],
    ["a redirect to a domain not allowed", "http://example.com/to-other-domain", "evil.net is not in the allowed domains"],
    ["a redirect to a file URL", "http://example.com/to-file", "file: URLs are not allowed"],
    ["an allowed name that does not resolve", "http://www.example.org/hello", "does not resolve"]
  ])("refuses %s", async (_what, url, reason) => {
    const result = await get(url)
    expect(result.ok).toBe(false)
    if (!result.ok) {
      // A denial found as the call ran: core's PolicyDenied, which the kernel logs as a denial.
      expect(result.tag).toBe("PolicyDenied")
      expect(result.message).toContain(reason)
    }
  })

  it("too many redirects is an error", async () => {
    expect(await get("http://example.com/loop")).toMatchObject({ ok: false, message: expect.stringContaining("more than 3 redirects") })
  })

  it("the timeout is one deadline for the whole call, across redirects", async () => {
    const before = requests.get("/slow-redirect") ?? 0
    const result = await get("http://example.com/slow-redirect", { timeout_ms: 1000, max_redirects: 10 })
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining("timed out after 1000 ms") })
    // Each hop takes 400 ms: within one deadline of 1000 ms at most three are asked (fewer on a busy machine); a
    // deadline per hop would have followed all ten redirects. (Counted, not timed: a busy machine only slows it.)
    const hops = (requests.get("/slow-redirect") ?? 0) - before
    expect(hops).toBeGreaterThanOrEqual(1)
    expect(hops).toBeLessThanOrEqual(3)
  })

  it("a server that never answers hits the deadline", async () => {
    expect(await get("http://example.com/hang", { timeout_ms: 500 })).toMatchObject({ ok: false, message: expect.stringContaining("timed out") })
  })

  it("the byte cap applies to decoded bytes: a small gzip body that inflates past it is refused", async () => {
    expect(await get("http://example.com/gzip-bomb")).toMatchObject({ ok: false, message: expect.stringContaining("over max_bytes (1024 bytes, decoded)") })
    expect(await get("http://example.com/gzip-small")).toMatchObject({ ok: true, value: { body: "compressed hello" } })
    expect(await get("http://example.com/big")).toMatchObject({ ok: false, message: expect.stringContaining("over max_bytes") })
  })
})

describe("the connection goes to the address that was checked", () => {
  it("a name resolved once per hop: a resolver answering loopback the second time is never asked again", async () => {
    const asked: Array<string> = []
    const connected: Array<string> = []
    const rebinding: Transport.Transport = {
      resolve: (host) => {
        asked.push(host)
        return Promise.resolve([{ address: asked.length === 1 ? "93.184.216.34" : "127.0.0.1", family: 4 }])
      },
      connectTo: (address) => {
        connected.push(address)
        return { host: "127.0.0.1", port }
      }
    }
    const tool = Sandbox.tools(policyOf(rule()), rebinding).find((t) => t.name === "http.get")!
    const result = await Effect.runPromise(tool.invoke({ url: "http://example.com/hello" }, context))
    expect(result).toMatchObject({ body: "hello from example.com", hops: [{ host: "example.com", address: "93.184.216.34" }] })
    expect(asked).toEqual(["example.com"])
    expect(connected).toEqual(["93.184.216.34"])
  })

  it("an address that cannot be reached gives way to the next checked one (IPv6 without a route), never to another", async () => {
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const closedPort = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const connected: Array<string> = []
    const dual: Transport.Transport = {
      resolve: () => Promise.resolve([{ address: "2606:4700::1111", family: 6 }, { address: "93.184.216.34", family: 4 }]),
      connectTo: (address) => {
        connected.push(address)
        return { host: "127.0.0.1", port: address.includes(":") ? closedPort : port }
      }
    }
    const tool = Sandbox.tools(policyOf(rule()), dual).find((t) => t.name === "http.get")!
    const result = await Effect.runPromise(tool.invoke({ url: "http://example.com/hello" }, context))
    expect(result).toMatchObject({ body: "hello from example.com", hops: [{ address: "93.184.216.34" }] })
    expect(connected).toEqual(["2606:4700::1111", "93.184.216.34"])
  })

  it("the system transport connects to the literal address checked, with the Host header of the URL", async () => {
    const open = policyOf(rule({ block_private: false, domains: ["127.0.0.1"] }))
    const tool = Sandbox.tools(open, Transport.system).find((t) => t.name === "http.get")!
    const result = await Effect.runPromise(tool.invoke({ url: `http://127.0.0.1:${port}/hello` }, context))
    expect(result).toMatchObject({ status: 200, body: "hello from 127.0.0.1", hops: [{ host: "127.0.0.1", address: "127.0.0.1" }] })
  })

  it("a resolver that never answers hits the deadline: it covers name resolution too", async () => {
    const hanging: Transport.Transport = { resolve: () => new Promise(() => {}), connectTo: () => ({ host: "127.0.0.1", port }) }
    const tool = Sandbox.tools(policyOf(rule({ timeout_ms: 300 })), hanging).find((t) => t.name === "http.get")!
    // Without a deadline over the resolution, this call would never end.
    const outcome = await Effect.runPromise(Effect.either(tool.invoke({ url: "http://example.com/hello" }, context)))
    expect(Either.isLeft(outcome) && outcome.left.message).toContain("timed out after 300 ms")
  })

  it("a name resolving to the metadata address is refused even with block_private: false", async () => {
    const transport = Transport.fake({ "example.com": ["169.254.169.254"] }, { host: "127.0.0.1", port })
    const tool = Sandbox.tools(policyOf(rule({ block_private: false })), transport).find((t) => t.name === "http.get")!
    const outcome = await Effect.runPromise(Effect.either(tool.invoke({ url: "http://example.com/hello" }, context)))
    expect(Either.isLeft(outcome) && outcome.left).toMatchObject({ _tag: "PolicyDenied", reason: expect.stringContaining("cloud metadata address") })
  })

  it("interrupting the call aborts the request", async () => {
    // The call's own deadline is ten minutes away: what ends it, and closes its connection, is the interruption.
    const tool = Sandbox.tools(policyOf(rule({ timeout_ms: 600_000 })), Transport.fake(hosts, { host: "127.0.0.1", port })).find((t) => t.name === "http.get")!
    const exit = await Effect.runPromiseExit(Effect.timeout(tool.invoke({ url: "http://example.com/hang/interrupted" }, context), "200 millis"))
    expect(exit._tag).toBe("Failure")
    // The server sees the connection closed (the request aborted), however long a busy machine takes to get there.
    for (let i = 0; i < 600 && closed.get("/hang/interrupted") === undefined; i++) await new Promise((r) => setTimeout(r, 50))
    expect(closed.get("/hang/interrupted")).toBe(1)
    expect(requests.get("/hang/interrupted")).toBe(1)
  }, 60_000)
})
