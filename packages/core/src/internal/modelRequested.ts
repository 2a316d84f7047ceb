/**
 * The `ModelRequested` a model step logs for the request it sent, and its text as the kernel stores it
 * (`JSON.stringify` of that payload). A replay compares a lazily read `ModelRequested`'s stored text with the text of
 * its own request's (`modelRecorded.ts`, `lazyPayload.ts`): the same text is the same payload, which the replay then
 * neither parses nor guards. The text is built from parts: each message is rendered once across an execution's
 * requests (the entry of `renders.ts` that also holds its canonical text), and an agent's requests repeat most of
 * their messages.
 */
import type { EventPayload } from "../Event.js"
import type * as ModelPort from "../ModelPort.js"
import { sha256 } from "./hash.js"
import { Renders } from "./renders.js"
import * as RequestHash from "./requestHash.js"

/** The `ModelRequested` of the request `sent`. */
export const requestedOf = (sent: ModelPort.ModelRequest, requestHash: string): EventPayload => ({
  _tag: "ModelRequested",
  model: sent.model,
  messages: sent.messages,
  tools: sent.tools.map((t) => t.name),
  requestHash,
  ...(sent.outputFormat === undefined ? {} : { outputSchema: sent.outputFormat.schema }),
  ...(sent.maxOutputTokens === undefined ? {} : { maxOutputTokens: sent.maxOutputTokens })
})

type Message = ModelPort.ModelRequest["messages"][number]

/** A message as `JSON.stringify` of an array writes it, an object's kept in `renders` (beside its canonical text). */
const messageText = (message: Message, renders: Renders): string => {
  if (typeof message !== "object" || message === null) return JSON.stringify(message) ?? "null"
  const entry = renders.of(message)
  return entry.stored ??= JSON.stringify(message) ?? "null"
}

/** `JSON.stringify` of the names of `tools`. */
const nameList = (tools: ModelPort.ModelRequest["tools"]): string => JSON.stringify(tools.map((t) => t.name))

/** A request whose `ModelRequested` text is built from parts: no output format, no token cap, a model named by a string. */
const plain = (sent: ModelPort.ModelRequest): boolean =>
  sent.outputFormat === undefined && sent.maxOutputTokens === undefined && typeof sent.model === "string"

const HEAD = '{"_tag":"ModelRequested","model":'

/**
 * `JSON.stringify(requestedOf(sent, requestHash))`: what a model step stores for the request it sent (tested against
 * it). A request with an output format or a token cap, or a model that is not a string, is rendered whole.
 */
export const requestedText = (sent: ModelPort.ModelRequest, requestHash: string, renders: Renders = new Renders()): string => {
  if (!plain(sent)) return JSON.stringify(requestedOf(sent, requestHash))
  let messages = "["
  for (let i = 0; i < sent.messages.length; i++) messages += (i === 0 ? "" : ",") + messageText(sent.messages[i]!, renders)
  renders.done()
  return HEAD + JSON.stringify(sent.model) + ',"messages":' + messages + '],"tools":' + renders.toolNames(sent.tools, nameList) +
    ',"requestHash":' + JSON.stringify(requestHash) + "}"
}

/** A replayed request: its hash, and whether a stored `ModelRequested` text is the one it logs. */
export interface Replayed {
  readonly requestHash: string
  readonly same: boolean
}

/**
 * Whether `text` holds `part` at `at`. A slice and `===`: V8's `startsWith` at a position compared several times
 * slower here (~1 us for a message of 90 characters, against 0.2).
 */
const holds = (text: string, at: number, part: string): boolean => text.slice(at, at + part.length) === part

/**
 * `sent`'s hash (`RequestHash.requestHash`) and whether `stored` is `requestedText(sent, requestHash)` (tested against
 * both), in one pass over the messages: one cache lookup finds both texts of a message, and the stored text is
 * compared in place, part by part, so the text of the request's `ModelRequested` is never built (a replayed model
 * step made it, a rope of ~1 KB, only to flatten and compare it).
 */
export const replayed = (sent: ModelPort.ModelRequest, stored: string, renders: Renders = new Renders()): Replayed => {
  if (!plain(sent)) {
    const requestHash = RequestHash.requestHash(sent, renders)
    return { requestHash, same: stored === requestedText(sent, requestHash) }
  }
  const model = JSON.stringify(sent.model)
  let at = HEAD.length + model.length
  let same = holds(stored, 0, HEAD) && holds(stored, HEAD.length, model) && holds(stored, at, ',"messages":[')
  at += 13
  let text = RequestHash.PLAIN_HEAD + "["
  const messages = sent.messages
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!
    if (i > 0) {
      text += ","
      same &&= stored.charCodeAt(at++) === 44
    }
    if (typeof message !== "object" || message === null) {
      text += RequestHash.part(message, renders)
      const written = messageText(message, renders)
      same &&= holds(stored, at, written)
      at += written.length
      continue
    }
    const entry = renders.of(message)
    text += entry.canonical
    if (same) {
      const written = entry.stored ??= JSON.stringify(message) ?? "null"
      same = holds(stored, at, written)
      at += written.length
    }
  }
  const requestHash = sha256(text + "]" + renders.requestTail(model, sent.tools, RequestHash.plainTail))
  renders.done()
  if (same) {
    const names = renders.toolNames(sent.tools, nameList)
    same = holds(stored, at, '],"tools":') && holds(stored, at + 10, names)
    at += 10 + names.length
    same &&= holds(stored, at, ',"requestHash":"') && holds(stored, at + 16, requestHash) && stored.length === at + 16 + requestHash.length + 2 &&
      holds(stored, at + 16 + requestHash.length, '"}')
  }
  return { requestHash, same }
}
