/**
 * A streamed reply scrubbed as it comes. A value may be split across deltas (`ann@exa` + `mple.com`), so text is
 * passed on only once it is settled: never the trailing run of non-space characters (a token that may go on: an
 * address, a key, a JWT), never the last `WINDOW` characters (spaced card and phone numbers), never from an open
 * `-----BEGIN` block, and never through a value found. What is passed on is the scrubbed text of the settled part,
 * so the deltas spell what scrubbing the whole reply gives. Tool-call arguments are JSON: held whole and scrubbed at
 * the end of the reply.
 */
import type { Middleware, ModelPort } from "@artana/core"

/** Characters always held back at the end of the text. */
const WINDOW = 64

/** How far the text `raw` is settled: nothing a later delta adds can make a value of what comes before. */
const settled = (raw: string): number => {
  let cut = Math.min(raw.length - WINDOW, /\S*$/.exec(raw)?.index ?? raw.length)
  const begin = raw.lastIndexOf("-----BEGIN")
  if (begin >= 0 && raw.indexOf("-----END", begin) < 0) cut = Math.min(cut, begin)
  return cut
}

/** Where values are in a text. */
export interface Scrubbed {
  readonly findings: ReadonlyArray<{ readonly start: number; readonly end: number }>
}

/**
 * The delta hook of one streamed call. `find` says where values are (it numbers nothing); `scrub` is the run's
 * scrubber (one value, one placeholder, in deltas and in the logged reply alike), given only settled text, so a value
 * cut short never gets a number; `scrubArguments` scrubs a tool call's JSON arguments.
 */
export const deltaHook = (
  find: (text: string) => Scrubbed,
  scrub: (text: string) => string,
  scrubArguments: (json: string) => string
): Middleware.DeltaHook => {
  let raw = ""
  let out = ""
  const calls = new Map<number, { id?: string; name?: string; arguments: string }>()
  const emit = (text: string): ReadonlyArray<ModelPort.ModelDelta> => {
    // An earlier part reads differently now (more context found a value): pass nothing more; the logged reply is
    // the truth and follows.
    if (!text.startsWith(out) || text.length === out.length) return []
    const next = text.slice(out.length)
    out = text
    return [{ _tag: "TextDelta", text: next }]
  }
  return {
    push: (delta) => {
      if (delta._tag === "ToolCallDelta") {
        const call = calls.get(delta.index) ?? { arguments: "" }
        if (delta.id !== undefined) call.id = delta.id
        if (delta.name !== undefined) call.name = delta.name
        call.arguments += delta.arguments
        calls.set(delta.index, call)
        return []
      }
      raw += delta.text
      let cut = settled(raw)
      if (cut <= 0) return []
      for (const f of find(raw).findings) if (f.start < cut && cut < f.end) cut = f.start
      return emit(scrub(raw.slice(0, cut)))
    },
    flush: () => {
      const text: Array<ModelPort.ModelDelta> = raw.length === 0 ? [] : [...emit(scrub(raw))]
      const tools = [...calls.entries()].sort(([a], [b]) => a - b).map(([index, call]): ModelPort.ModelDelta => ({
        _tag: "ToolCallDelta",
        index,
        ...(call.id === undefined ? {} : { id: call.id }),
        ...(call.name === undefined ? {} : { name: call.name }),
        arguments: scrubArguments(call.arguments)
      }))
      return [...text, ...tools]
    }
  }
}
