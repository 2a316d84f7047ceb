/**
 * The HTTP side of a fake model provider, written once for every adapter's test server (`FakeOpenAi`,
 * `FakeAnthropic`): a node:http server on 127.0.0.1 (a free port) that serves one route from a script of replies, one
 * per request, records every request (parsed JSON body, and whether the client hung up before the answer), answers a
 * request beyond the script with a 400 saying so, and never answers a `hang`. The adapter's fake encodes its answers.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"

/** A request as the server received it. */
export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  /** The parsed JSON body (`undefined` when it was not JSON). */
  readonly body: unknown
  /** Resolves when the client closed the connection before the server answered (a timeout, an interruption). */
  readonly abandoned: Promise<void>
}

export interface Server {
  /** The server's origin, `http://127.0.0.1:<port>`. */
  readonly url: string
  /** Every request received, in order. */
  readonly requests: ReadonlyArray<RecordedRequest>
  /** Replies not yet played. */
  readonly remaining: () => number
  /** Stops the server and drops open connections (hung requests included); again, it does nothing. */
  readonly close: () => Promise<void>
}

/** Never answer: the request stays open until the client gives up. */
export interface Hang {
  readonly _tag: "Hang"
}

/** A request the server never answers. */
export const hang: Hang = { _tag: "Hang" }

/** How a provider's fake speaks; its replies are tagged, and `Hang` is never answered. */
export interface Protocol<R extends { readonly _tag: string }> {
  /** The route served, `POST <path>` (or the routes: the answer reads the request's `path`). */
  readonly path: string | ReadonlyArray<string>
  /** The body of an error answer in the provider's format. */
  readonly errorBody: (status: number, message: string) => unknown
  /** Writes the answer to `reply` (the `n`th request, from 1; never a `Hang`). */
  readonly answer: (reply: R, request: RecordedRequest, response: Http.ServerResponse, n: number) => void
}

/** Writes a JSON answer. */
export const sendJson = (res: Http.ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void => {
  res.writeHead(status, { "content-type": "application/json", ...headers })
  res.end(JSON.stringify(body))
}

/**
 * Awaited before each chunk of a streamed answer is written (`request` from 1, `chunk` from 0, of `chunks`): a test
 * streams slowly, or holds a stream where it wants.
 */
export type Pace = (at: { readonly request: number; readonly chunk: number; readonly chunks: number }) => Promise<void>

/**
 * Writes a streamed (server-sent events) answer to the `n`th request: each of `all` as `line` encodes it, each awaited
 * on `pace` when given (a client that went away gets nothing more), then `done`.
 */
export const sendEvents = <A>(
  res: Http.ServerResponse,
  all: ReadonlyArray<A>,
  n: number,
  pace: Pace | undefined,
  line: (chunk: A) => string,
  done: string,
  headers: Readonly<Record<string, string>> = {}
): void => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", ...headers })
  if (pace === undefined) {
    for (const c of all) res.write(line(c))
    return void res.end(done)
  }
  void (async () => {
    for (const [i, c] of all.entries()) {
      await pace({ request: n, chunk: i, chunks: all.length })
      // The client went away (an abort, a killed process): nothing more to send.
      if (res.destroyed) return
      res.write(line(c))
    }
    res.end(done)
  })()
}

const parse = (raw: Buffer): unknown => {
  try {
    return JSON.parse(raw.toString("utf8"))
  } catch {
    return undefined
  }
}

/** Starts a server that plays `script` in `protocol`. */
export const start = <R extends { readonly _tag: string }>(name: string, protocol: Protocol<R>, script: ReadonlyArray<R>): Promise<Server> => {
  const requests: Array<RecordedRequest> = []
  let next = 0
  const server = Http.createServer((req, res) => {
    const raw: Array<Buffer> = []
    req.on("data", (b: Buffer) => raw.push(b))
    req.on("end", () => {
      const n = requests.length + 1
      let abandon: () => void = () => {}
      const abandoned = new Promise<void>((resolve) => (abandon = resolve))
      res.on("close", () => {
        if (!res.writableEnded) abandon()
      })
      const path = (req.url ?? "").split("?")[0] ?? ""
      const recorded = { method: req.method ?? "", path, headers: req.headers, body: parse(Buffer.concat(raw)), abandoned }
      requests.push(recorded)
      const served: ReadonlyArray<string> = typeof protocol.path === "string" ? [protocol.path] : protocol.path
      if (req.method !== "POST" || !served.includes(path)) {
        return sendJson(res, 404, protocol.errorBody(404, `${name} serves POST ${served.join(", POST ")}, not ${req.method} ${path}`))
      }
      const reply = script[next]
      if (reply === undefined) {
        // Not retryable (400), so a test that makes one call too many fails at once and says why.
        return sendJson(res, 400, protocol.errorBody(400, `${name}: the script has ${script.length} replies but request ${n} arrived`))
      }
      next++
      if (reply._tag !== "Hang") protocol.answer(reply, recorded, res, n)
    })
  })
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      if (address === null || typeof address === "string") return reject(new Error(`${name}: unexpected address ${address}`))
      resolve({
        url: `http://127.0.0.1:${address.port}`,
        requests,
        remaining: () => script.length - next,
        close: () =>
          new Promise<void>((done, fail) => {
            if (!server.listening) return done()
            server.close((e) => (e === undefined ? done() : fail(e)))
            server.closeAllConnections()
          })
      })
    })
  })
}

/** `start` as a scoped resource: the server closes with the scope. */
export const scoped = <S extends Server>(started: () => Promise<S>): Effect.Effect<S, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.promise(started), (server) => Effect.promise(() => server.close()))
