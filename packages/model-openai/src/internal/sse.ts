/**
 * A streamed reply's body read here rather than through the SDK's `Stream` (the request is still the SDK's: its
 * headers, its HTTP errors, its abort). The SDK passes each event through four async generators (the body's chunks,
 * the SSE chunks, the SSE messages, the parsed events) and yields one event per turn of each; this reads the body with
 * one loop and one generator, parsing an event only when the one before it was taken (the first delta of a network
 * read goes on before the rest of the read is parsed). What it accepts and refuses is the SDK's (`openai/core/streaming`): events separated by a blank line
 * (`\n`, `\r\n` or `\r` ends a line), `data:` lines joined by newlines, comments and other fields skipped, an event
 * with no blank line after it at the end dropped, everything after `[DONE]` skipped, an event whose data carries an
 * `error` thrown as the SDK's `APIError`, data that is not JSON thrown as the `SyntaxError` it is. Aborted (the
 * signal), the body ends quietly, as the SDK's stream does; left early, the body is cancelled (its request ends).
 */
import { APIError, OpenAIError } from "openai"

/** One SSE event: its `event:` field (null when none) and its `data:` lines, joined. */
export interface SseEvent {
  readonly event: string | null
  readonly data: string
}

const LINE_END = /\r\n|\r|\n/g

/**
 * A decoder of SSE text fed in pieces as they arrive: `next` parses lines only until an event completes, so the first
 * event of a network read is out before the rest of the read is looked at.
 */
export const decoder = () => {
  let buffer = ""
  let at = 0
  let event: string | null = null
  let data: Array<string> = []
  /** One line: the event it completes, if it is a blank line ending one. */
  const line = (text: string): SseEvent | undefined => {
    if (text === "") {
      const out = event || data.length > 0 ? { event, data: data.join("\n") } : undefined
      event = null
      data = []
      return out
    }
    // A comment.
    if (text.charCodeAt(0) === 58) return undefined
    const colon = text.indexOf(":")
    const field = colon === -1 ? text : text.slice(0, colon)
    let value = colon === -1 ? "" : text.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    if (field === "event") event = value
    else if (field === "data") data.push(value)
    return undefined
  }
  return {
    /** More text of the body. */
    feed: (text: string): void => {
      buffer = at === buffer.length ? text : buffer.slice(at) + text
      at = 0
    },
    /**
     * The next event the text fed so far completes, or undefined. `final`: the body ended (a lone `\r` at the end is
     * a line's end, not the first half of a `\r\n`; an unfinished line is read, an unfinished event dropped).
     */
    next: (final: boolean): SseEvent | undefined => {
      for (;;) {
        LINE_END.lastIndex = at
        const m = LINE_END.exec(buffer)
        if (m === null || (!final && m[0] === "\r" && m.index === buffer.length - 1)) {
          // The line is not whole yet: it waits for more text, unless the body ended.
          if (final && at < buffer.length) {
            line(buffer.slice(at))
            at = buffer.length
          }
          return undefined
        }
        const text = buffer.slice(at, m.index)
        at = m.index + m[0].length
        const out = line(text)
        if (out !== undefined) return out
      }
    }
  }
}

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
  const sse = decoder()
  let done = false
  let ended = false
  /** The event's value; undefined past `[DONE]`. */
  const parsed = (e: SseEvent): A | undefined => {
    if (done || e.data.startsWith("[DONE]")) {
      done = true
      return undefined
    }
    const value: unknown = JSON.parse(e.data)
    if (typeof value === "object" && value !== null && "error" in value && value.error) {
      throw new APIError(undefined, value.error, undefined, response.headers)
    }
    if (!is(value)) throw new OpenAIError(`the stream sent an event that is not ${what}: ${e.data.slice(0, 200)}`)
    return value
  }
  try {
    for (;;) {
      const read = await reader.read()
      if (read.done) break
      sse.feed(text(read.value, false))
      for (let e = sse.next(false); e !== undefined; e = sse.next(false)) {
        const value = parsed(e)
        if (value !== undefined) yield value
      }
    }
    ended = true
    sse.feed(text(new Uint8Array(0), true))
    for (let e = sse.next(true); e !== undefined; e = sse.next(true)) {
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
