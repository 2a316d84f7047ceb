/**
 * A run's numbering read back from its log. A replayed model call gives the request the code built (raw values) and
 * the messages the log says were sent (placeholders): each message's values are found again and marked, and the
 * placeholder the logged text holds where a mark is, is the one that value had. Read back, not derived again: the
 * same whatever order the run's calls were first scrubbed in (concurrent branches), whichever process scrubbed them.
 *
 * @internal
 */
import type { Chat } from "@artana/core"
import { type Candidate, type Kind } from "./kinds.js"
import { substitute } from "./detect.js"
import { makeTally, scrubMessage, type TextScrubber, textsOf } from "./messages.js"
import type { Numbering } from "./numbering.js"

const MARK = /\uE000(\d+)\uE001/g
const PLACEHOLDER_AT = /<[A-Z][A-Z0-9_]*_\d+>/y

/** A scrubber that numbers nothing: each value becomes a mark (private-use characters JSON leaves as they are). */
const marking = (enabled: ReadonlyArray<Kind>, found: Array<Candidate & { readonly value: string }>): TextScrubber => ({
  scrub: (text) =>
    substitute(text, enabled, (candidate, value) => {
      found.push({ ...candidate, value })
      return `\uE000${found.length - 1}\uE001`
    })
})

/** The placeholder `sent` holds at each mark of `marked`, by the mark's index; undefined where the texts differ otherwise. */
const readBack = (marked: string, sent: string): ReadonlyArray<readonly [number, string]> | undefined => {
  const out: Array<readonly [number, string]> = []
  let at = 0
  let last = 0
  for (const mark of marked.matchAll(MARK)) {
    const literal = marked.slice(last, mark.index)
    if (!sent.startsWith(literal, at)) return undefined
    at += literal.length
    PLACEHOLDER_AT.lastIndex = at
    const placeholder = PLACEHOLDER_AT.exec(sent)?.[0]
    if (placeholder === undefined) return undefined
    out.push([Number(mark[1]), placeholder])
    at += placeholder.length
    last = mark.index + mark[0].length
  }
  const rest = marked.slice(last)
  return sent.length === at + rest.length && sent.endsWith(rest) ? out : undefined
}

/**
 * Takes into `numbering` what one logged call shows: every placeholder its sent messages and its reply hold is taken
 * (numbering goes on after them), and, when the whole request was sent as scrubbing it gives (as many messages, each of
 * the same role with the same text around its values), each value of `raw` has the placeholder the logged text holds
 * in its place. One message that does not line up (a middleware after this one dropped, added or rewrote one) and
 * nothing of the call is read back: a message paired with another's logged text would give a value the wrong
 * placeholder. `learned`: raw messages already read, with the logged texts they were read against (a chat's list
 * repeats them in every request).
 */
export const learn = (
  numbering: Numbering,
  enabled: ReadonlyArray<Kind>,
  raw: ReadonlyArray<Chat.ChatMessage>,
  sent: ReadonlyArray<Chat.ChatMessage>,
  reply: Chat.AssistantMessage | undefined,
  learned: WeakMap<Chat.ChatMessage, string>
): void => {
  if (reply !== undefined) for (const text of textsOf(reply)) numbering.reserve(text)
  let aligned = raw.length === sent.length
  const read: Array<readonly [Candidate & { readonly value: string }, string]> = []
  const fresh: Array<readonly [Chat.ChatMessage, string]> = []
  for (let i = 0; i < sent.length; i++) {
    const logged = sent[i]!
    const loggedTexts = textsOf(logged)
    const loggedKey = loggedTexts.join("\u0000")
    const message = aligned ? raw[i] : undefined
    const known = message === undefined ? undefined : learned.get(message)
    if (known !== undefined) {
      if (known !== loggedKey) aligned = false
      continue
    }
    for (const text of loggedTexts) numbering.reserve(text)
    if (message === undefined || !aligned) continue
    const found: Array<Candidate & { readonly value: string }> = []
    const marked = scrubMessage(marking(enabled, found), message, makeTally())
    const markedTexts = textsOf(marked)
    if (marked.role !== logged.role || markedTexts.length !== loggedTexts.length) {
      aligned = false
      continue
    }
    for (let j = 0; j < markedTexts.length && aligned; j++) {
      const pairs = readBack(markedTexts[j]!, loggedTexts[j]!)
      if (pairs === undefined) aligned = false
      else for (const [index, placeholder] of pairs) read.push([found[index]!, placeholder])
    }
    fresh.push([message, loggedKey])
  }
  if (!aligned) return
  for (const [value, placeholder] of read) numbering.learn(value.kind, value.key, value.value, placeholder)
  for (const [message, key] of fresh) learned.set(message, key)
}
