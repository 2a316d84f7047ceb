/**
 * Capability guard: the tenant's capabilities decide which tools the model sees and which calls run.
 *
 * The kernel already enforces each tool's own `requiresCapability`. The guard adds rules kept outside the
 * tools (a plugin's tools, a stricter policy for one deployment): `require` maps tool names (or `prefix.*`)
 * to the capability they need. Tools the tenant lacks are stripped from the request before it reaches the
 * model, with a note in the log; a call to one anyway is `PolicyDenied` and never runs.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { Errors, type Middleware, Tenant } from "@artana/core"

export interface Options {
  /** Tool name, or `prefix.*`, -> capability required to see and call it. */
  readonly require?: Readonly<Record<string, string>> | undefined
}

const NAME = "capability-guard"

/** The capability a tool needs under these rules (the tool's own requirement first). */
export const requiredCapability = (tool: string, own: string | undefined, rules: Readonly<Record<string, string>>): string | undefined => {
  if (own !== undefined) return own
  const exact = rules[tool]
  if (exact !== undefined) return exact
  let best: string | undefined
  for (const pattern of Object.keys(rules)) {
    if (pattern.endsWith(".*") && tool.startsWith(pattern.slice(0, -1)) && (best === undefined || pattern.length > best.length)) best = pattern
  }
  return best === undefined ? undefined : rules[best]
}

/** The guard. */
export const middleware = (options: Options = {}): Middleware.Interceptor => {
  const rules = options.require ?? {}
  return {
    name: NAME,
    beforeModel: (request, ctx) =>
      Effect.gen(function*() {
        const stripped = request.tools.filter((t) => !Tenant.hasCapability(ctx.tenant, requiredCapability(t.name, undefined, rules)))
        if (stripped.length === 0) return request
        yield* ctx.note(NAME, "tools_stripped", { tools: stripped.map((t) => t.name) })
        return { ...request, tools: request.tools.filter((t) => !stripped.includes(t)) }
      }),
    beforeTool: (call, ctx) => {
      const capability = requiredCapability(call.tool, call.requiresCapability, rules)
      return Tenant.hasCapability(ctx.tenant, capability)
        ? Effect.succeed(call)
        : Effect.fail(new Errors.PolicyDenied({
          tool: call.tool,
          ...(capability === undefined ? {} : { capability }),
          reason: `tenant ${ctx.tenant.tenantId} lacks capability "${capability}" required for "${call.tool}"`
        }))
    }
  }
}
