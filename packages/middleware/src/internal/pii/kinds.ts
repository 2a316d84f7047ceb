/**
 * The kinds of PII the scrubber knows, and what a detector reports.
 *
 * @internal
 */

/** Every kind, in the order placeholders are documented. */
export const kinds = [
  "email",
  "phone",
  "card",
  "iban",
  "ssn",
  "ipv4",
  "ipv6",
  "openai_key",
  "aws_access_key",
  "aws_secret_key",
  "github_token",
  "jwt",
  "private_key"
] as const

export type Kind = (typeof kinds)[number]

/** A span a detector found in a text. `key` identifies the value: two spellings of one value share it. */
export interface Candidate {
  readonly kind: Kind
  readonly start: number
  readonly end: number
  readonly key: string
}

export type Detector = (text: string, out: Array<Candidate>) => void

/**
 * When two candidates overlap, the higher rank wins (then the longer): a key's base64 body may look like
 * anything, an email's local part may hold digits, an IBAN holds a card-length run of digits.
 */
export const rank: Readonly<Record<Kind, number>> = {
  private_key: 100,
  jwt: 90,
  openai_key: 85,
  aws_access_key: 85,
  aws_secret_key: 85,
  github_token: 85,
  email: 70,
  iban: 60,
  card: 50,
  ssn: 45,
  ipv6: 40,
  ipv4: 35,
  phone: 20
}

/**
 * "Not preceded by a word character (or one of `extra`)", except that a JSON-style escape (`\n`, `\r`, `\t`)
 * written into plain text, as logs do, counts as a separator. `first`, a character class the match starts
 * with, is checked first: a cheap test at every position spares the lookbehinds.
 */
export const notAfter = (extra = "", first = ""): string =>
  (first === "" ? "" : `(?=${first})`) + String.raw`(?:(?<![\w${extra}])|(?<=\\[nrt]))`
