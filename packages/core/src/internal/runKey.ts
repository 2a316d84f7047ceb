/**
 * The key of a run in this process's per-run maps: its tenant, a NUL, its id. The last key made is kept, so that a
 * streamed call's path, which asks for the same run's key a few times per delta (keeping it, waking its readers, their
 * read), looks the same string up each time (its hash computed once) rather than building and hashing a new one.
 */
let lastTenant = ""
let lastRun = ""
let lastKey = "\u0000"

export const runKey = (tenantId: string, runId: string): string => {
  if (tenantId !== lastTenant || runId !== lastRun) {
    lastTenant = tenantId
    lastRun = runId
    lastKey = `${tenantId}\u0000${runId}`
  }
  return lastKey
}
