/**
 * The tools a plan can call and the policy that governs them. Filled from `@artana/sandbox` (its tools, its
 * deny-by-default policy engine and its audit reader): the CLI holds no policy logic of its own.
 */
import type { Middleware, Tool } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as PlanRunner from "../PlanRunner.js"
import type * as Report from "../Report.js"

export interface Toolbox {
  readonly tools: ReadonlyArray<Tool.Tool>
  readonly middleware: ReadonlyArray<Middleware.Interceptor>
  /** The policy as the run's input logs it. */
  readonly policy: PlanRunner.PolicyRecord | undefined
}

/** A policy file that cannot be used: file, where in it, and why. */
export class PolicyError extends Schema.TaggedError<PolicyError>()("PolicyError", {
  file: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.file}: ${this.reason}`
  }
}

/** The tools under the policy in `file`. */
export const fromPolicyFile = (file: string): Effect.Effect<Toolbox, PolicyError> =>
  Effect.fail(new PolicyError({ file, reason: "the sandbox is not wired in yet" }))

/** The tools of a logged run (for a replay: they decode logged results, and never run). */
export const fromRecord = (_record: PlanRunner.PolicyRecord | undefined): Effect.Effect<Toolbox, PolicyError> =>
  Effect.succeed({ tools: [], middleware: [], policy: undefined })

/** Reads the policy engine's audit records of a run. */
export const audit: Report.AuditReader = () => new Map()
