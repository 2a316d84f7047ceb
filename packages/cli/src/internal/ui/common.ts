/** What the routes share: the server's options, and how a failure is shown. */
import { Errors } from "@artana/core"
import * as Cause from "effect/Cause"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type { Guard } from "./guard.js"
import type { Run } from "./run.js"
import { h, type Html, type PageContext, problem } from "./views/html.js"

export interface AppOptions {
  readonly run: Run
  /** The store as shown (a path, or a URL with its password hidden). */
  readonly store: string
  readonly tenant: string
  readonly allowActions: boolean
  readonly approver: string
  /** The only tenants served (`Inspector.Options.tenants`), or undefined: any. */
  readonly tenants?: ReadonlySet<string> | undefined
  /** Who decides, from the request (`Inspector.Options.approverOf`), or undefined: the form's approver. */
  readonly approverOf?: ((request: Request) => string | undefined) | undefined
  readonly auditKey: Redacted.Redacted<string> | undefined
  /** After a decision on a run that is not a plan run, resume it (`Inspector.Options.resumeAfterDecision`). */
  readonly resumeAfterDecision: boolean
  readonly guard: Guard
}

/** The status code and page of a failed read: a run that does not exist, bad input, or a fault of the store. */
export const failurePage = (ctx: PageContext, cause: Cause.Cause<unknown>): { readonly status: 400 | 404 | 500; readonly body: Html; readonly message: string } => {
  const failure = Cause.failureOption(cause)
  const error: unknown = Option.isSome(failure) ? failure.value : Cause.squash(cause)
  const message = error instanceof Error ? error.message : String(error)
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : ""
  if (tag === "RunNotFound") return { status: 404, body: problem(ctx, "No such run", message), message }
  if (tag === "InvalidInput") return { status: 400, body: problem(ctx, "Bad input", message), message }
  return { status: 500, body: problem(ctx, "The store could not be read", message), message }
}

/** A notice above the inbox: what an action did, or why it did nothing. */
export const notice = (text: string, ok: boolean): Html => h`<p class="notice${ok ? "" : " problem"}">${text}</p>`

/** `InvalidInput` for a form field. */
export const badField = (what: string, reason: string) => new Errors.InvalidInput({ what, reason })
