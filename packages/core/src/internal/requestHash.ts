/**
 * The hash of a model request: `SHA-256(canonical JSON of { model, messages, tools, outputFormat, maxOutputTokens })`
 * (`outputFormat` and `maxOutputTokens` null when absent), the `requestHash` a `ModelRequested` records and a replay
 * compares. Every model step computes it, live or replayed, so its text is built from parts: each message, tool and
 * output format is rendered once per object (a `WeakMap` by identity) and reused by every later request that holds
 * the same object. An agent's requests repeat most of their messages (the system prompt, the task, the recent
 * window) and all of their tools, so replaying a run renders each of them once instead of once per turn. The text is
 * exactly `canonicalJson` of that object (tested against it). Messages, tools and formats are immutable values (their
 * types are readonly): an object changed in place after a request used it would keep its first rendering.
 */
import type { ModelRequest } from "../ModelPort.js"
import { canonicalJson, sha256 } from "./hash.js"

/**
 * The texts of an object of a request: its canonical JSON (the hash's) and, once asked for, `JSON.stringify`'s (how
 * a message is written in the `ModelRequested` a model step stores, `modelRequested.ts`). One entry for both: a
 * replayed model step finds both texts of a message with one lookup.
 */
export interface Rendered {
  readonly canonical: string
  stored: string | undefined
}

const rendered = new WeakMap<object, Rendered>()

/** The texts of `value`, its canonical JSON made (and remembered) on first use. */
export const renderedOf = (value: object): Rendered => {
  let entry = rendered.get(value)
  if (entry === undefined) {
    entry = { canonical: canonicalJson(value), stored: undefined }
    rendered.set(value, entry)
  }
  return entry
}

/** `canonicalJson(value)` as an element of an array writes it ("null" for undefined), remembered for an object. */
export const part = (value: unknown): string => {
  if (typeof value !== "object" || value === null) return value === undefined ? "null" : canonicalJson(value)
  return renderedOf(value).canonical
}

/** `canonicalJson` of an array of request objects (messages, tools), each rendered once per object. */
export const parts = (values: ReadonlyArray<unknown>): string => {
  let out = "["
  for (let i = 0; i < values.length; i++) out += (i === 0 ? "" : ",") + part(values[i])
  return out + "]"
}

/** What `requestText` writes before the messages of a request without an output format or a token cap. */
export const PLAIN_HEAD = '{"maxOutputTokens":null,"messages":'

/** What `requestText` writes after the messages of a request without an output format (`model`: its canonical JSON). */
export const plainTail = (model: string, tools: ReadonlyArray<unknown>): string => ',"model":' + model + ',"outputFormat":null,"tools":' + parts(tools) + "}"

/** The canonical JSON a request's hash covers (keys in sorted order, as `canonicalJson` writes them). */
export const requestText = (request: ModelRequest): string =>
  '{"maxOutputTokens":' + canonicalJson(request.maxOutputTokens ?? null) +
  ',"messages":' + parts(request.messages) +
  ',"model":' + canonicalJson(request.model) +
  ',"outputFormat":' + part(request.outputFormat ?? null) +
  ',"tools":' + parts(request.tools) + "}"

/** The request's hash: SHA-256 of `requestText`, hex. */
export const requestHash = (request: ModelRequest): string => sha256(requestText(request))
