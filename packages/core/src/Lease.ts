/**
 * A caller's hold on a run it drives, as the kernel sees it: a worker's lease on the run's task. The kernel checks
 * it before every tool handler starts, and hands its signal on to the handler.
 *
 * @since 0.1.0
 */

/**
 * What the caller of `Kernel.execute` / `Kernel.resume` knows about its hold on the run.
 *
 * @example
 * const controller = new AbortController()
 * let expiresAt = task.leaseExpiresAt ?? 0 // moved on by each heartbeat; the controller aborts on LeaseLost
 * const lease: Lease.Lease = { expiresAt: () => expiresAt, signal: controller.signal }
 * yield* kernel.execute(workflow, { runId: task.runId, tenant: task.tenant, input, lease })
 */
export interface Lease {
  /**
   * Epoch milliseconds, by this process's clock, until which the caller holds the run. Read just before each
   * tool handler would start: once it has passed (the process was paused, or too busy to renew it), another
   * process may own the run, so the handler does not start and the execution ends with `OwnershipLost`.
   */
  readonly expiresAt: () => number
  /** Aborted when the caller learns that it lost the run (a heartbeat found the lease taken over). */
  readonly signal: AbortSignal
}
