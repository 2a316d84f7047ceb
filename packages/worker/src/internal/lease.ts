/** A worker's hold on one task, as the kernel sees it. */
import type { Lease, TaskQueue } from "@artana/core"

/** The lease handed to the kernel, and how the worker moves it on or gives it up. */
export interface Held {
  readonly lease: Lease.Lease
  /** Moves the lease's end to `until` (a heartbeat's answer). */
  readonly renewed: (until: number | undefined) => void
  /** Aborts the signal when the lease has run out by `now`. */
  readonly check: (now: number) => void
  /** Aborts the signal: another worker holds the task. */
  readonly lost: (reason: string) => void
}

/**
 * The worker's hold on one task, as the kernel sees it (`Lease`): the lease's end by this process's clock, moved on
 * by each heartbeat, and a signal aborted once the lease is lost (a heartbeat found it taken over, or it ran out
 * before a heartbeat could renew it). Tool handlers get the signal; the kernel starts no handler after it.
 */
export const make = (task: TaskQueue.Task): Held => {
  const controller = new AbortController()
  let expiresAt = task.leaseExpiresAt ?? 0
  const lease: Lease.Lease = { expiresAt: () => expiresAt, signal: controller.signal }
  return {
    lease,
    renewed: (until: number | undefined) => {
      if (until !== undefined) expiresAt = until
    },
    check: (now: number) => {
      if (now >= expiresAt && !controller.signal.aborted) {
        controller.abort(`the lease on task ${task.taskId} ran out at ${new Date(expiresAt).toISOString()} before a heartbeat renewed it`)
      }
    },
    lost: (reason: string) => controller.abort(reason)
  }
}
