/**
 * The middleware chain around a call: `before*` hooks run first to last, `after*` hooks last to first (an onion).
 * Each hook may rewrite the value it is given, or refuse the call; the first refusal ends the chain.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { Interceptor } from "../Middleware.js"

/** How a chain ended: every hook passed the value on (rewritten or not), or one refused the call. */
export type ChainResult<A, E> =
  | { readonly _tag: "Passed"; readonly value: A }
  /** `value`: the call as the hooks before the refusing one left it. */
  | { readonly _tag: "Refused"; readonly error: E; readonly interceptor: Interceptor; readonly value: A }

/**
 * Runs one hook of every interceptor over `value`: in the chain's order for the `before` hooks, in reverse for the
 * `after` ones. `hookOf` picks the hook (undefined: the interceptor has none).
 */
export const run = <A, E>(
  interceptors: ReadonlyArray<Interceptor>,
  side: "before" | "after",
  value: A,
  hookOf: (interceptor: Interceptor) => ((value: A) => Effect.Effect<A, E>) | undefined
): Effect.Effect<ChainResult<A, E>> => {
  // No generator for an empty chain: a kernel without middleware pays nothing per call.
  if (interceptors.length === 0) return Effect.succeed({ _tag: "Passed", value })
  return Effect.gen(function*() {
    let current = value
    const n = interceptors.length
    for (let k = 0; k < n; k++) {
      const interceptor = interceptors[side === "before" ? k : n - 1 - k]!
      const hook = hookOf(interceptor)
      if (hook === undefined) continue
      const next = yield* Effect.either(hook(current))
      if (Either.isLeft(next)) return { _tag: "Refused", error: next.left, interceptor, value: current } as const
      current = next.right
    }
    return { _tag: "Passed", value: current } as const
  })
}
