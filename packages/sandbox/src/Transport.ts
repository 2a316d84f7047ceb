/**
 * How `http.get` reaches the network: name resolution, and where a TCP connection for a checked address goes. The
 * default resolves with the system resolver and connects to the very address that was checked (so a name cannot
 * resolve to one address for the check and another for the connection). Tests replace it to play public hosts on a
 * local server, while the policy still sees, and checks, the public addresses.
 *
 * @since 0.1.0
 */
import * as dns from "node:dns"

/** One address of a name. */
export interface Resolved {
  readonly address: string
  readonly family: 4 | 6
}

export interface Transport {
  /** Every address the name resolves to (A and AAAA). */
  readonly resolve: (host: string) => Promise<ReadonlyArray<Resolved>>
  /** The host and port a connection to the checked `address` opens (the address itself, by default). */
  readonly connectTo: (address: string, port: number) => { readonly host: string; readonly port: number }
}

/** The system resolver, and connections to the checked address. */
export const system: Transport = {
  resolve: async (host) => {
    const all = await dns.promises.lookup(host, { all: true, verbatim: true })
    return all.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))
  },
  connectTo: (address, port) => ({ host: address, port })
}

/**
 * A transport for tests: names resolve from `hosts` (a name missing there does not resolve), and connections to
 * any address go to `server` (a local test server), whatever the address.
 *
 * @example
 * const transport = Transport.fake({ "example.com": ["93.184.216.34"], "evil.example.com": ["127.0.0.1"] }, { host: "127.0.0.1", port })
 */
export const fake = (
  hosts: Readonly<Record<string, ReadonlyArray<string>>>,
  server: { readonly host: string; readonly port: number }
): Transport => ({
  resolve: (host) => {
    const addresses = hosts[host.toLowerCase()]
    if (addresses === undefined) return Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" }))
    return Promise.resolve(addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })))
  },
  connectTo: () => server
})
