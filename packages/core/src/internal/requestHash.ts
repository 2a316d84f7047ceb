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

const rendered = new WeakMap<object, string>()

/** `canonicalJson(value)`, remembered for an object. */
const part = (value: unknown): string => {
  if (typeof value !== "object" || value === null) return value === undefined ? "null" : canonicalJson(value)
  let text = rendered.get(value)
  if (text === undefined) {
    text = canonicalJson(value)
    rendered.set(value, text)
  }
  return text
}

const parts = (values: ReadonlyArray<unknown>): string => {
  let out = "["
  for (let i = 0; i < values.length; i++) out += (i === 0 ? "" : ",") + part(values[i])
  return out + "]"
}

/** The canonical JSON a request's hash covers (keys in sorted order, as `canonicalJson` writes them). */
export const requestText = (request: ModelRequest): string =>
  '{"maxOutputTokens":' + canonicalJson(request.maxOutputTokens ?? null) +
  ',"messages":' + parts(request.messages) +
  ',"model":' + canonicalJson(request.model) +
  ',"outputFormat":' + part(request.outputFormat ?? null) +
  ',"tools":' + parts(request.tools) + "}"

/** The request's hash: SHA-256 of `requestText`, hex. */
export const requestHash = (request: ModelRequest): string => sha256(requestText(request))
