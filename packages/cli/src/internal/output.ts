/**
 * How commands talk to people and programs: stdout for results, stderr for errors and progress, one JSON document
 * for `--format json`, exit codes for everything.
 */
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ExitCode from "../ExitCode.js"
import * as T from "./terminal.js"

export type Format = "console" | "json"

/** Ends a command with an exit code (its output already printed). */
export class Done extends Data.TaggedError("Done")<{ readonly code: number }> {}

export const stdout = (text: string) => Effect.sync(() => void process.stdout.write(text.endsWith("\n") ? text : `${text}\n`))
export const stderr = (text: string) => Effect.sync(() => void process.stderr.write(text.endsWith("\n") ? text : `${text}\n`))

/**
 * `text` on stdout, waiting while the pipe to a slower reader is full: what a command prints a page at a time stays a
 * page in memory, however slowly the other end reads (Node would otherwise queue every write in the process).
 */
export const stdoutPaced = (text: string): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (process.stdout.write(text)) return resume(Effect.void)
    const done = () => {
      process.stdout.off("drain", done)
      process.stdout.off("close", done)
      process.stdout.off("error", done)
      resume(Effect.void)
    }
    process.stdout.on("drain", done)
    process.stdout.on("close", done)
    process.stdout.on("error", done)
  })

/** One JSON document on stdout. */
export const json = (value: unknown) => stdout(JSON.stringify(value, null, 2))

export const outStyle = (): T.Style => T.style(T.colorsFor(process.stdout, process.env))
export const errStyle = (): T.Style => T.style(T.colorsFor(process.stderr, process.env))

const messageOf = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error) ?? String(error)

const tagOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string" ? error._tag : "Error"

/** How a command reports: the format, and whether an internal error shows its stack (`--verbose`, `DEBUG`). */
export interface Reporting {
  readonly format: Format
  readonly verbose: boolean
}

/** `--verbose` on the command line, or DEBUG set in the environment (for errors before the options are parsed). */
export const verboseIn = (argv: ReadonlyArray<string>): boolean => argv.includes("--verbose") || (process.env.DEBUG ?? "") !== ""

/**
 * An internal error (a defect: a bug, or a fault no typed error describes), as a person reads it: its message and
 * where to report it; the stack and the fibers' trace only when asked for.
 */
export const internalError = (defect: unknown, verbose: boolean): string => {
  if (verbose) return `internal error: ${Cause.pretty(Cause.die(defect))}`
  return `internal error: ${messageOf(defect)}\n  (a bug in artana: please report it with the output of the same command run with --verbose)`
}

/**
 * Runs a command's body: its result is an exit code; a failure is printed on stderr (its message; as `{ "error":
 * { tag, message, exitCode } }` under `--format json`) and becomes its exit code; a defect is an internal error (1),
 * its stack printed only under `--verbose` or `DEBUG`.
 */
export const command = <E, R>(reporting: Reporting, body: Effect.Effect<number, E, R>): Effect.Effect<void, Done, R> =>
  body.pipe(
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
      const failure = Cause.failureOption(cause)
      const error: unknown = Option.isSome(failure) ? failure.value : Cause.squash(cause)
      const code: number = Option.isSome(failure) ? ExitCode.ofError(error) : ExitCode.Internal
      const message = Option.isSome(failure) ? messageOf(error) : internalError(error, reporting.verbose)
      const printed = reporting.format === "json"
        ? stderr(JSON.stringify({ error: { tag: tagOf(error), message, exitCode: code } }))
        : stderr(Option.isSome(failure) ? `${errStyle().red("error")} ${message}` : message)
      return Effect.as(printed, code)
    }),
    Effect.flatMap((code) => (code === ExitCode.Ok ? Effect.void : Effect.fail(new Done({ code }))))
  )
