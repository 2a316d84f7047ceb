/**
 * What the CLI prints: colours (only when the stream is a terminal, and never under NO_COLOR), aligned tables,
 * status icons, durations.
 */

export interface Style {
  readonly enabled: boolean
  readonly bold: (s: string) => string
  readonly dim: (s: string) => string
  readonly red: (s: string) => string
  readonly green: (s: string) => string
  readonly yellow: (s: string) => string
  readonly cyan: (s: string) => string
}

const sgr = (enabled: boolean, open: number, close: number) => (s: string) => (enabled ? `\u001b[${open}m${s}\u001b[${close}m` : s)

export const style = (enabled: boolean): Style => ({
  enabled,
  bold: sgr(enabled, 1, 22),
  dim: sgr(enabled, 2, 22),
  red: sgr(enabled, 31, 39),
  green: sgr(enabled, 32, 39),
  yellow: sgr(enabled, 33, 39),
  cyan: sgr(enabled, 36, 39)
})

/** Colours on a terminal, unless NO_COLOR is set; FORCE_COLOR (not "0") turns them on anywhere. */
export const colorsFor = (stream: { readonly isTTY?: boolean | undefined }, env: NodeJS.ProcessEnv): boolean => {
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0") return true
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false
  return stream.isTTY === true && env.TERM !== "dumb"
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g

/** The text without its ANSI colour codes. */
export const strip = (s: string): string => s.replace(ANSI, "")

/** Width on screen (ANSI colour codes take none). */
export const width = (s: string): number => [...s.replace(ANSI, "")].length

const pad = (s: string, to: number, right: boolean) => {
  const fill = " ".repeat(Math.max(0, to - width(s)))
  return right ? fill + s : s + fill
}

/**
 * An aligned table: a header row (bold) and rows, columns separated by two spaces; `right` lists the columns
 * aligned to the right (numbers). The last column is not padded.
 */
export const table = (
  s: Style,
  header: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  options: { readonly right?: ReadonlyArray<number> } = {}
): string => {
  const widths = header.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i] ?? ""))))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === cells.length - 1 && !options.right?.includes(i) ? c : pad(c, widths[i]!, options.right?.includes(i) ?? false))).join("  ").trimEnd()
  return [s.bold(line(header)), ...rows.map(line)].join("\n")
}

/** `12 ms`, `1.4 s`, `2 min 5 s`. */
export const duration = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const minutes = Math.floor(ms / 60_000)
  return `${minutes} min ${Math.round((ms - minutes * 60_000) / 1000)} s`
}

/** Every match of `pattern` (global) in `text` as its escape, `\u001b`: shown, not obeyed. */
export const escapeMatches = (text: string, pattern: RegExp): string =>
  text.replace(pattern, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/**
 * Control characters (an escape sequence a model or a tool wrote could clear the screen, retitle the window or hide what
 * follows; a newline would break the table) and bidirectional controls (which reorder what follows).
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

/** At most `max` characters of `text` (text from a run's log: its unsafe characters escaped), an ellipsis marking the cut. */
export const clip = (text: string, max = 72): string => {
  const safe = escapeMatches(text, UNSAFE)
  return safe.length <= max ? safe : `${safe.slice(0, max - 1)}…`
}

/** An ISO timestamp without milliseconds, in UTC. */
export const timestamp = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z")

export type Status = "ok" | "denied" | "failed" | "skipped" | "in_doubt" | "awaiting_approval" | "completed" | "running" | "paused" | "needs_reconciliation" | "continued"

/** The icon of a status, coloured. */
export const icon = (s: Style, status: Status | string): string => {
  switch (status) {
    case "ok":
    case "completed":
      return s.green("✓")
    case "denied":
      return s.red("⊘")
    case "failed":
      return s.red("✗")
    case "skipped":
      return s.dim("○")
    case "in_doubt":
    case "needs_reconciliation":
      return s.yellow("?")
    case "running":
      return s.cyan("▶")
    case "paused":
    case "awaiting_approval":
      return s.yellow("‖")
    case "continued":
      return s.cyan("↪")
    default:
      return " "
  }
}
