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

/**
 * The capability the guard's rules require for a tool (an exact name first, else the longest `prefix.*`), whatever
 * the tool requires of its own: a rule adds to the tool's requirement, it never gives way to it (an MCP or plugin
 * tool always names one of its own, and a stricter rule for one deployment must still hold).
 */
export const requiredCapability = (tool: string, rules: Readonly<Record<string, string>>): string | undefined => {
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
        const stripped = request.tools.filter((t) => !Tenant.hasCapability(ctx.tenant, requiredCapability(t.name, rules)))
        if (stripped.length === 0) return request
        yield* ctx.note(NAME, "tools_stripped", { tools: stripped.map((t) => t.name) })
        return { ...request, tools: request.tools.filter((t) => !stripped.includes(t)) }
      }),
    beforeTool: (call, ctx) => {
      // Both must hold: the tool's own requirement (the kernel checks it too) and the rule's.
      const capability = [call.requiresCapability, requiredCapability(call.tool, rules)].find((c) => !Tenant.hasCapability(ctx.tenant, c))
      return capability === undefined
        ? Effect.succeed(call)
        : Effect.fail(new Errors.PolicyDenied({
          tool: call.tool,
          capability,
          reason: `tenant ${ctx.tenant.tenantId} lacks capability "${capability}" required for "${call.tool}"`
        }))
    }
  }
}
