// How every example ends when it fails: the error's own message, which says what went wrong and what to do (a typed
// Artana error's `_tag` and `message`), not a stack. `--verbose` or DEBUG set in the environment adds the stack.

/** `ModelError: the model provider refused the API key ...`: what a person reads first. */
export const describeError = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const tag = "_tag" in error && typeof error._tag === "string" ? error._tag : error instanceof Error ? error.name : "Error"
    const message = "message" in error && typeof error.message === "string" && error.message !== "" ? error.message : JSON.stringify(error)
    return `${tag}: ${message}`
  }
  return String(error)
}

const verbose = (): boolean => process.argv.includes("--verbose") || (process.env.DEBUG ?? "") !== ""

/** Runs an example's `main`; a failure is printed as its message (the stack only when asked for) and exits 1. */
export const runMain = async (main: () => Promise<unknown>): Promise<void> => {
  try {
    await main()
  } catch (error) {
    const stack = error instanceof Error && error.stack !== undefined ? error.stack : undefined
    console.error(`error: ${describeError(error)}`)
    console.error(verbose() && stack !== undefined ? stack : "  (run with --verbose, or DEBUG=1, for the stack)")
    process.exitCode = 1
  }
}
