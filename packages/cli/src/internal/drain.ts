/**
 * Waiting for output to leave the process. Node writes to a pipe asynchronously once the pipe is full, and
 * `process.exit` drops what is still queued: a slow reader of `artana report --format json` got the first 64 KiB.
 * Every way the CLI ends goes through `whenDrained`.
 */

/**
 * Calls `then` once everything written so far to stdout and stderr has been handed to the operating system (or the
 * stream failed: a reader that went away must not keep the process alive). Writes are ordered, so the callback of
 * an empty write runs after every earlier write has completed.
 */
export const whenDrained = (then: () => void): void => {
  let pending = 2
  const done = () => {
    pending -= 1
    if (pending === 0) then()
  }
  process.stdout.write("", done)
  process.stderr.write("", done)
}
