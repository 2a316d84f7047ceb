/**
 * Forks (`Kernel.fork`): a new run whose log is a prefix of another run's, copied and re-chained under its own id,
 * optionally with recorded step results replaced (what-if), then driven on by the current code. See the core
 * README's "Fork".
 *
 * @since 0.1.0
 */
import type * as Errors from "./Errors.js"
import type { ForkedFrom } from "./Event.js"
import { canonicalJson, sha256 } from "./internal/hash.js"
import type * as Json from "./Json.js"

/** Where the fork's prefix ends: the last event it keeps (`atSeq`), or a step's last event (`atStep`). */
export type ForkPoint =
  | { readonly atSeq: number; readonly atStep?: undefined }
  | { readonly atStep: string; readonly atSeq?: undefined }

/**
 * What `Kernel.fork` takes: the run (its tenant's: another tenant's run is `RunNotFound`), where its prefix ends, and
 * optionally step results to replace and the fork's id.
 *
 * - `atSeq`: the prefix keeps events 1..`atSeq` (past the run's head: its head), cut back to the last step boundary at
 *   or before it (see `Fork.boundary` in the README): a step the prefix would end inside (a model call without its
 *   reply, a tool call without its outcome, an approval, a run's end) is left out whole, and the fork runs it live.
 * - `atStep`: the prefix ends with the step of that key (its last event), as `atSeq` would.
 * - `overrides`: step key -> the JSON result the fork records for it instead (see `ForkOverrides`).
 * - `forkRunId`: the fork's id. Default: `forkRunId(runId, seq, overrides)`, derived from the request, so the same
 *   request twice is the same fork (the second continues it).
 */
export type ForkRequest = ForkPoint & {
  readonly tenantId: string
  readonly runId: string
  readonly overrides?: ForkOverrides | undefined
  readonly forkRunId?: string | undefined
}

/**
 * Replaced results, by step key: a memoized step's value (`StepCompleted`), a tool call's result (`ToolCompleted`; a
 * call whose handler failed, `ToolFailed` of kind `tool_error` or `timeout`, becomes a `ToolCompleted`), a human's
 * response (`HumanResponded`), a signal's payload (`SignalReceived`), or a model step's reply (`ModelCompleted`: a
 * string is the reply's text, an object an assistant message `{ role: "assistant", content, toolCalls? }`; usage and
 * cost stay as recorded). Checked as JSON only: the code decodes it on replay like any logged value, so a value its
 * schema refuses fails the fork's run there (a typed error), never silently. The step must be settled in the prefix.
 */
export type ForkOverrides = Readonly<Record<string, Json.Json>>

/** A fork's log, written: its id, where it came from (the prefix's last seq, after the cut back), and whether it is new. */
export interface Forked {
  readonly runId: string
  readonly forkedFrom: ForkedFrom
  /** False when the fork existed already (the same request again, or a race lost to it): nothing was written. */
  readonly created: boolean
}

/** What writing a fork's log fails with. */
export type ForkError = Errors.RunNotFound | Errors.StoreError | Errors.LogTampered | Errors.InvalidInput

/**
 * The default id of a fork of `runId` whose prefix ends at `seq`: `RUN::fork::SEQ`, and `::` with a hash of the
 * overrides when there are any. Derived from the request, so asking twice gives the same fork.
 */
export const forkRunId = (runId: string, seq: number, overrides?: ForkOverrides | undefined): string =>
  overrides === undefined || Object.keys(overrides).length === 0
    ? `${runId}::fork::${seq}`
    : `${runId}::fork::${seq}::${sha256(canonicalJson(overrides)).slice(0, 16)}`
