/**
 * The tools a plan can call and the policy that governs them, from `@artana/sandbox` (its tools, its deny-by-default
 * policy engine as middleware, and its audit reader), loaded through `@artana/plugin-sdk` like every other plugin: the CLI
 * holds no policy logic of its own.
 */
import { Json, type Middleware, type Tool } from "@artana/core"
import type { PluginErrors } from "@artana/plugin-sdk";
import { Plugin } from "@artana/plugin-sdk"
import { Audit, Policy, Sandbox } from "@artana/sandbox"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import type * as PlanRunner from "../PlanRunner.js"
import type * as Report from "../Report.js"

export interface Toolbox {
  readonly tools: ReadonlyArray<Tool.Tool>
  readonly middleware: ReadonlyArray<Middleware.Interceptor>
  /** The policy as the run's input logs it. */
  readonly policy: PlanRunner.PolicyRecord | undefined
}

/** A policy file that cannot be used: file, line, column, field and why (the sandbox's own error). */
export const PolicyError = Policy.PolicyError
export type PolicyError = Policy.PolicyError

const asPolicyError = (file: string) => (error: PluginErrors.PluginError): PolicyError =>
  new Policy.PolicyError({ file, field: error._tag === "InvalidPluginConfig" ? error.path.replace(/^\$\.policy/, "$") : "$", reason: error.message })

const load = (config: unknown, file: string) =>
  Effect.map(Effect.mapError(Plugin.load(Sandbox.plugin, config), asPolicyError(file)), (loaded) => ({ tools: loaded.tools, middleware: loaded.middleware }))

/** The sandbox's tools and middleware under the policy in `file`, and the record the run logs of it. */
export const fromPolicyFile = (file: string): Effect.Effect<Toolbox, PolicyError> =>
  Effect.gen(function*() {
    const loaded = yield* Policy.load(file)
    const document = Json.fromUnknown(loaded.source)
    if (!document.ok) return yield* new Policy.PolicyError({ file, field: "$", reason: `the policy is not JSON-compatible: ${document.error}` })
    const toolbox = yield* load(Sandbox.configOf(loaded), file)
    return { ...toolbox, policy: { file: loaded.file, sha256: loaded.sha256, document: document.json } }
  })

/**
 * The tools of a logged run, rebuilt from its logged policy (for a replay: their handlers never run; they decode
 * the logged results). A run logged without a policy has no sandbox tools.
 */
export const fromRecord = (record: PlanRunner.PolicyRecord | undefined): Effect.Effect<Toolbox, PolicyError> =>
  record === undefined
    ? Effect.succeed({ tools: [], middleware: [], policy: undefined })
    : Effect.map(load({ baseDir: path.dirname(record.file), policy: record.document }, record.file), (toolbox) => ({ ...toolbox, policy: record }))

/** Reads the sandbox's audit records of a run (per step key: allowed or denied, why, what it touched). */
export const audit: Report.AuditReader = Audit.read
