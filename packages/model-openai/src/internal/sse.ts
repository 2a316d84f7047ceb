/**
 * A streamed reply's body read here rather than through the SDK's `Stream` (the request is still the SDK's: its
 * headers, its HTTP errors, its abort). The SDK passes each event through four async generators (the body's chunks,
 * the SSE chunks, the SSE messages, the parsed events) and a streaming `TextDecoder`; this reads the body with one
 * loop and one generator. The SSE grammar is `eventsource-parser`'s (events end at a blank line; `\n`, `\r\n` or `\r`
 * ends a line; `data:` lines joined by newlines; comments and other fields skipped; an event with no blank line after
 * it at the end dropped). Each network read is split into events at once (cheap: no JSON), and each event's JSON is
 * parsed only when the one before it was taken, so the first delta of a read goes on before the rest of it is parsed.
 * As the SDK: everything after `[DONE]` skipped, an event whose data carries an `error` thrown as the SDK's
 * `APIError`, data that is not JSON thrown as the `SyntaxError` it is. Aborted (the signal), the body ends quietly, as
 * the SDK's stream does; left early, the body is cancelled (its request ends).
 */
import { createParser } from "eventsource-parser"
import { APIError, OpenAIError } from "openai"

/** Decodes UTF-8 (replacing what is not), one whole piece at a time: no state, so one serves every stream. */
const utf8 = new TextDecoder()

/**
 * The body's bytes as text, whole lines at a time: a read is decoded through its last line end, the rest held for the
 * next (a line end is one byte no UTF-8 sequence contains, so no character is cut). Cheaper than a streaming
 * `TextDecoder`, whose converter costs microseconds to make and to run.
 */
const lines = () => {
  let held: Uint8Array | undefined
  return (bytes: Uint8Array, final: boolean): string => {
    let all = bytes
    if (held !== undefined) {
      all = new Uint8Array(held.length + bytes.length)
      all.set(held)
      all.set(bytes, held.length)
    }
    let end = all.length
    if (!final) while (end > 0 && all[end - 1] !== 10 && all[end - 1] !== 13) end--
    held = end < all.length ? all.slice(end) : undefined
    return end === 0 ? "" : utf8.decode(end === all.length ? all : all.subarray(0, end))
  }
}

/**
 * The JSON values of a streamed response's events, one at a time, each checked by `is` (a value it refuses ends the
 * stream with an error naming `what`).
 */
export async function* events<A>(response: Response, signal: AbortSignal, is: (u: unknown) => u is A, what: string): AsyncGenerator<A> {
  if (response.body === null) throw new OpenAIError("Attempted to iterate over a response with no body")
  const reader = response.body.getReader()
  const text = lines()
  // The data of the events a read completed, in order; taken from `at` on.
  const pending: Array<string> = []
  let at = 0
  const sse = createParser({ onEvent: (e) => void pending.push(e.data) })
  /** The next event's data a read completed, if any left. */
  const take = (): string | undefined => {
    if (at < pending.length) return pending[at++]
    pending.length = 0
    at = 0
    return undefined
  }
  let done = false
  let ended = false
  /** The event's value; undefined past `[DONE]`. */
  const parsed = (data: string): A | undefined => {
    if (done || data.startsWith("[DONE]")) {
      done = true
      return undefined
    }
    const value: unknown = JSON.parse(data)
    if (typeof value === "object" && value !== null && "error" in value && value.error) {
      throw new APIError(undefined, value.error, undefined, response.headers)
    }
    if (!is(value)) throw new OpenAIError(`the stream sent an event that is not ${what}: ${data.slice(0, 200)}`)
    return value
  }
  try {
    for (;;) {
      const read = await reader.read()
      if (read.done) break
      sse.feed(text(read.value, false))
      for (let e = take(); e !== undefined; e = take()) {
        const value = parsed(e)
        if (value !== undefined) yield value
      }
    }
    ended = true
    // The body ended: an unfinished line is read as a line (an event it does not end is dropped).
    sse.feed(text(new Uint8Array(0), true))
    sse.reset({ consume: true })
    for (let e = take(); e !== undefined; e = take()) {
      const value = parsed(e)
      if (value !== undefined) yield value
    }
  } catch (e) {
    // Aborted (a deadline, a caller gone): the events end here, as the SDK's stream ends.
    if (signal.aborted) return
    throw e
  } finally {
    if (!ended) reader.cancel().catch(() => undefined)
  }
}
