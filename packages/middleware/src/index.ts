/**
 * @artana/middleware: the governed-call chain. Compose it in the order you want it to run:
 *
 * ```ts
 * Middleware.layer([Pii.middleware(), CapabilityGuard.middleware()])
 * ```
 *
 * @since 0.1.0
 */
export * as CapabilityGuard from "./CapabilityGuard.js"
export * as Pii from "./Pii.js"
