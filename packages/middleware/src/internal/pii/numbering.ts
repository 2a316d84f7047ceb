/**
 * A run's placeholder numbering: which placeholder each value has, and the last number issued of each kind. A value
 * (by its normalized key: two spellings of one phone share it) keeps its placeholder; a new one gets the next number of
 * its kind. Numbers are only ever raised, so a placeholder once seen (issued here, read back from the log, or found in
 * a text) is never issued to another value.
 *
 * @internal
 */
import { type Kind, kinds } from "./kinds.js"

/** Any placeholder's shape: `<EMAIL_3>`, `<AWS_ACCESS_KEY_1>`. */
export const PLACEHOLDER = /<[A-Z][A-Z0-9_]*_\d+>/g

export const placeholderOf = (kind: Kind, n: number): string => `<${kind.toUpperCase()}_${n}>`

const kindOfLabel: ReadonlyMap<string, Kind> = new Map(kinds.map((k) => [k.toUpperCase(), k]))

/** The kind a placeholder names (`<EMAIL_3>` -> `email`), if it is one. */
export const kindOfPlaceholder = (placeholder: string): Kind | undefined =>
  kindOfLabel.get(placeholder.slice(1, placeholder.lastIndexOf("_")))

/**
 * Numbers a run can reach: a text holding `<EMAIL_9007199254740992>` (a paste, a web page) must not raise the counter
 * where `n + 1 === n` (every new value would get one placeholder). A placeholder past it is left alone: numbering
 * never gets there.
 */
const MAX_NUMBER = 1_000_000_000

/** A placeholder's number, or undefined past `MAX_NUMBER`. */
const numberOf = (placeholder: string): number | undefined => {
  const digits = placeholder.slice(placeholder.lastIndexOf("_") + 1, -1)
  if (digits.length > 10) return undefined
  const n = Number(digits)
  return n <= MAX_NUMBER ? n : undefined
}

export interface Numbering {
  /** The value's placeholder: the one it has, else the next number of its kind. */
  readonly issue: (kind: Kind, key: string, value: string) => string
  /** Takes `placeholder` as the value's (read back from a logged request); numbering goes on after it. */
  readonly learn: (kind: Kind, key: string, value: string, placeholder: string) => void
  /** Numbering goes on after every placeholder in `text` (the value they stand for may be unknown here). */
  readonly reserve: (text: string) => void
  /** Placeholder -> value (the first spelling seen). */
  readonly values: ReadonlyMap<string, string>
  /** Placeholders the log showed standing for two different values: never restored. */
  readonly conflicted: ReadonlySet<string>
}

export const make = (): Numbering => {
  const byKey = new Map<string, string>()
  const keyOf = new Map<string, string>()
  const values = new Map<string, string>()
  const counters = new Map<Kind, number>()
  const conflicted = new Set<string>()

  const raise = (kind: Kind, n: number | undefined) => {
    if (n !== undefined && n > (counters.get(kind) ?? 0)) counters.set(kind, n)
  }

  return {
    issue: (kind, key, value) => {
      const id = `${kind}\u0000${key}`
      const known = byKey.get(id)
      if (known !== undefined) return known
      const n = (counters.get(kind) ?? 0) + 1
      counters.set(kind, n)
      const placeholder = placeholderOf(kind, n)
      byKey.set(id, placeholder)
      keyOf.set(placeholder, id)
      values.set(placeholder, value)
      return placeholder
    },
    learn: (kind, key, value, placeholder) => {
      if (kindOfPlaceholder(placeholder) !== kind || numberOf(placeholder) === undefined) return
      raise(kind, numberOf(placeholder))
      const id = `${kind}\u0000${key}`
      const had = keyOf.get(placeholder)
      if (had !== undefined && had !== id) conflicted.add(placeholder)
      if (had !== undefined) return
      if (!byKey.has(id)) byKey.set(id, placeholder)
      keyOf.set(placeholder, id)
      values.set(placeholder, value)
    },
    reserve: (text) => {
      if (!text.includes("<")) return
      for (const placeholder of text.match(PLACEHOLDER) ?? []) {
        const kind = kindOfPlaceholder(placeholder)
        if (kind !== undefined) raise(kind, numberOf(placeholder))
      }
    },
    values,
    conflicted
  }
}
