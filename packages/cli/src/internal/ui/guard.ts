/**
 * Who may use the inspector. On a loopback address (the default, 127.0.0.1) anyone on this machine may read; the `Host`
 * header must name the address the server listens on, so a web page elsewhere cannot read it through a DNS name it
 * points at 127.0.0.1 (DNS rebinding). On any other address every request carries the token printed when the server
 * started: `Authorization: Bearer TOKEN`, or `?token=TOKEN` once (the server then sets it as an HttpOnly, SameSite=Strict
 * cookie and redirects to the same address without it); without it: 401 and nothing is read. Every POST (an action)
 * also carries the form token the server put in its own pages, and its `Origin`, when sent, must be the server's: a
 * page elsewhere cannot make a browser approve a call.
 */
import { getCookie, setCookie } from "hono/cookie"
import type { MiddlewareHandler } from "hono"
import * as crypto from "node:crypto"

export interface Guard {
  /** The token every request needs (a non-loopback bind), or undefined (loopback). */
  readonly token: string | undefined
  /** The token of the server's forms. */
  readonly csrf: string
  /** The `Host` headers accepted; undefined: any (a non-loopback bind, where the token protects). */
  readonly hosts: () => ReadonlySet<string> | undefined
  /** The name of the token's cookie (`cookieName` of the server's port). */
  readonly cookie: () => string
}

/**
 * The token cookie's name for the server on `port`. A browser keeps cookies per host, whatever the port, so two
 * inspectors on one host (on two ports) would each overwrite the other's under one name, and every login of one logged
 * the other out: each port's cookie has its own name.
 */
export const cookieName = (port: number): string => `artana_ui_token_${port}`

/** Whether an address is this machine's loopback: no token is needed there. */
export const isLoopback = (host: string): boolean => host === "127.0.0.1" || host === "localhost" || host === "::1" || host === "[::1]"

/** A fresh random token (192 bits, URL-safe). */
export const newToken = (): string => crypto.randomBytes(24).toString("base64url")

/** The `Host` headers a loopback server on `port` answers to. */
export const loopbackHosts = (port: number): ReadonlySet<string> => new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`])

/** Compares in constant time, so the time taken tells nothing of the token. */
const same = (given: string | undefined, expected: string): boolean => {
  if (given === undefined) return false
  const a = crypto.createHash("sha256").update(given).digest()
  const b = crypto.createHash("sha256").update(expected).digest()
  return crypto.timingSafeEqual(a, b)
}

const bearer = (header: string | undefined): string | undefined => {
  const m = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header)
  return m === null ? undefined : m[1]
}

/** The host of an `Origin` header, or undefined when it is not a URL. */
const hostOf = (origin: string): string | undefined => {
  try {
    return new URL(origin).host
  } catch {
    return undefined
  }
}

export const guard = (g: Guard): MiddlewareHandler => async (c, next) => {
  const hosts = g.hosts()
  const host = c.req.header("host") ?? ""
  if (hosts !== undefined && !hosts.has(host.toLowerCase())) {
    return c.text(`artana ui answers to ${[...hosts].join(", ")}, not to the host "${host}"`, 403)
  }
  if (g.token !== undefined) {
    const fromQuery = c.req.query("token")
    if (fromQuery !== undefined && same(fromQuery, g.token)) {
      setCookie(c, g.cookie(), g.token, { httpOnly: true, sameSite: "Strict", path: "/" })
      const url = new URL(c.req.url)
      url.searchParams.delete("token")
      // The path as one leading slash: `//evil.example/?token=...` must not redirect to another host.
      return c.redirect(`/${url.pathname.replace(/^\/+/, "")}${url.search}`, 303)
    }
    if (!same(bearer(c.req.header("authorization")), g.token) && !same(getCookie(c, g.cookie()), g.token)) {
      c.header("www-authenticate", "Bearer")
      return c.text("artana ui: this server needs the token it printed when it started (?token=TOKEN once, or Authorization: Bearer TOKEN)", 401)
    }
  }
  if (c.req.method === "POST") {
    const origin = c.req.header("origin")
    // An opaque origin (`null`: a sandboxed frame, a data: page) is another page's too.
    if (origin !== undefined && (origin === "null" || hostOf(origin) !== host)) {
      return c.text("artana ui: an action must come from its own pages", 403)
    }
    const body = await c.req.parseBody()
    const csrf = body["csrf"]
    if (typeof csrf !== "string" || !same(csrf, g.csrf)) return c.text("artana ui: the form's token is missing or stale; reload the page", 403)
  }
  await next()
  return undefined
}
