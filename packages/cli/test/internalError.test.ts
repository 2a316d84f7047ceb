// An internal error (a defect: a bug, or a fault no typed error describes) reaches a person as its message and where
// to report it, in one line and a hint, exit code 1; its stack only under `--verbose` or `DEBUG`. The store and the
// commands turn every fault a user can cause (corrupt rows, user code that throws, a missing run) into typed errors,
// so the defect here is made in the command's body itself, through the wrapper every command runs in.
import { afterEach, describe, expect, it, vi } from "@effect/vitest"
import { Errors } from "@artana/core"
import { Effect, Either } from "effect"
import * as ExitCode from "../src/ExitCode.js"
import * as Out from "../src/internal/output.js"

/** What `body` prints on stderr and the exit code it ends with, run as a command is. */
const runCommand = <E>(reporting: Out.Reporting, body: Effect.Effect<number, E>) =>
  Effect.gen(function*() {
    const written: Array<string> = []
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk))
      return true
    })
    const ended = yield* Effect.either(Out.command(reporting, body)).pipe(Effect.ensuring(Effect.sync(() => spy.mockRestore())))
    return { stderr: written.join(""), code: Either.isLeft(ended) ? ended.left.code : ExitCode.Ok }
  })

/** A bug inside a command: a throw where no typed error is expected. */
const buggy = Effect.sync((): number => {
  throw new TypeError("Cannot read properties of undefined (reading 'headSeq')")
})

/** Lines of a JavaScript stack trace. */
const stackLines = (text: string) => text.split("\n").filter((l) => /^\s+at /.test(l))

describe("an internal error", () => {
  afterEach(() => vi.restoreAllMocks())

  it.effect("prints its message and where to report it, no stack, and exits 1", () =>
    Effect.gen(function*() {
      const { stderr, code } = yield* runCommand({ format: "console", verbose: false }, buggy)
      expect(code).toBe(ExitCode.Internal)
      expect(stderr).toBe(
        "internal error: Cannot read properties of undefined (reading 'headSeq')\n" +
          "  (a bug in artana: please report it with the output of the same command run with --verbose)\n"
      )
      expect(stackLines(stderr)).toEqual([])
    }))

  it.effect("with --verbose, prints the stack too", () =>
    Effect.gen(function*() {
      const { stderr, code } = yield* runCommand({ format: "console", verbose: true }, buggy)
      expect(code).toBe(ExitCode.Internal)
      expect(stderr).toContain("internal error: TypeError: Cannot read properties of undefined (reading 'headSeq')")
      expect(stackLines(stderr).length).toBeGreaterThan(0)
    }))

  it.effect("under --format json, is one JSON document with its tag, message and exit code, no stack", () =>
    Effect.gen(function*() {
      const { stderr, code } = yield* runCommand({ format: "json", verbose: false }, buggy)
      expect(code).toBe(ExitCode.Internal)
      const doc = JSON.parse(stderr) as { error: { tag: string; message: string; exitCode: number } }
      expect(doc.error).toMatchObject({ tag: "Error", exitCode: 1 })
      expect(doc.error.message).toContain("Cannot read properties of undefined (reading 'headSeq')")
      expect(stackLines(doc.error.message)).toEqual([])
    }))

  it("is verbose with --verbose on the command line or DEBUG set in the environment, and not otherwise", () => {
    const before = process.env.DEBUG
    try {
      delete process.env.DEBUG
      expect(Out.verboseIn(["node", "artana", "show-run", "r1"])).toBe(false)
      expect(Out.verboseIn(["node", "artana", "show-run", "r1", "--verbose"])).toBe(true)
      process.env.DEBUG = "1"
      expect(Out.verboseIn(["node", "artana", "show-run", "r1"])).toBe(true)
    } finally {
      if (before === undefined) delete process.env.DEBUG
      else process.env.DEBUG = before
    }
  })

  it.effect("a typed failure is not an internal error: its message, its own exit code, no hint", () =>
    Effect.gen(function*() {
      const missing = new Errors.RunNotFound({ runId: "r1", tenantId: "acme" })
      const { stderr, code } = yield* runCommand({ format: "console", verbose: false }, Effect.fail(missing))
      expect(code).toBe(ExitCode.NotFound)
      expect(stderr).toContain(missing.message)
      expect(stderr).not.toContain("internal error")
    }))
})
