// The life of a server's connections: made once however many uses ask at once, and ended with the layer, whatever the
// idle sweep is doing. Real server processes (plain JavaScript fixtures, fast to start) whose pids a file records.
import { afterAll, describe, expect, it, vi } from "vitest"
import { Effect, Exit, Scope } from "effect"
import { McpServers, McpTools } from "@artana/mcp"
import * as fs from "node:fs"
import * as path from "node:path"
import { packageDir, tempFolder } from "./helpers.js"

const dir = tempFolder("sessions-life")
let n = 0
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
const started: Array<number> = []
afterAll(() => {
  for (const pid of started) if (alive(pid)) process.kill(pid, "SIGKILL")
})
/** The pids a fixture recorded (one line each; `eof` lines are not pids). */
const pidsOf = (file: string): Array<number> => {
  const pids = fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((l) => /^\d+$/.test(l)).map(Number) : []
  started.push(...pids.filter((p) => !started.includes(p)))
  return pids
}

/** The layer's servers, in a scope of their own (closed by the test): `fixture` started with a file for its pids. */
const layerOf = async (fixture: string, over: Record<string, unknown>) => {
  n += 1
  const pidFile = path.join(dir, `pids-${n}.txt`)
  const decoded = McpServers.decodeConfig({
    servers: [{ name: "pids", command: process.execPath, args: [path.join(packageDir, "test/fixtures", fixture), pidFile], ...over }]
  })
  if (decoded._tag === "Left") throw decoded.left
  const scope = Effect.runSync(Scope.make())
  const service = await Effect.runPromise(Scope.extend(McpServers.make(decoded.right), scope))
  return { pidFile, service, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

describe("a connection made by two uses at once", () => {
  /** Lists on `tenantId`'s connection twice at once, closes the layer, and says which server processes outlived it. */
  const scenario = async (over: Record<string, unknown>, tenantId: string | undefined) => {
    const { close, pidFile, service } = await layerOf("pidServer.mjs", over)
    const listed = await Effect.runPromise(Effect.all([McpTools.list(service, undefined, tenantId), McpTools.list(service, undefined, tenantId)], { concurrency: "unbounded" }))
    await close()
    const pids = pidsOf(pidFile)
    // The layer's close ends its processes (stdin closed: the server exits); one the layer lost track of runs on.
    await vi.waitFor(() => expect(pids.filter(alive)).toEqual([]), { timeout: 30_000, interval: 50 }).catch(() => undefined)
    return { listed, pids, outlived: pids.filter(alive) }
  }

  it("per_tenant: one tenant's two first uses at once start one process, and none outlives the layer", async () => {
    const { listed, outlived, pids } = await scenario({}, "acme")
    expect(listed.map((l) => l.entries.length)).toEqual([1, 1])
    expect(outlived).toEqual([])
    expect(pids).toHaveLength(1)
  }, 120_000)

  it("shared: two first uses at once start one process, and none outlives the layer", async () => {
    const { outlived, pids } = await scenario({ sessions: "shared" }, undefined)
    expect(outlived).toEqual([])
    expect(pids).toHaveLength(1)
  }, 120_000)
})

describe("the layer closing", () => {
  /** A server that exits only on a signal, listed once for acme; `beforeClose` runs before the layer closes. */
  const endedWithLayer = async (over: Record<string, unknown>, beforeClose: (pidFile: string) => Promise<void>) => {
    const { close, pidFile, service } = await layerOf("stubbornServer.mjs", over)
    await Effect.runPromise(McpTools.list(service, undefined, "acme"))
    const [pid] = pidsOf(pidFile)
    await beforeClose(pidFile)
    expect(alive(pid!)).toBe(true)
    await close()
    // The scope has closed: its processes are ended (a process that exits right after would orphan one left running).
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(alive(pid!)).toBe(false)
  }

  it("while the idle sweep is ending a tenant's process still ends it: none outlives the layer's scope", () =>
    endedWithLayer({ idle_timeout_ms: 100 }, (pidFile) =>
      // Idle past 100 ms, the sweep (every 50 ms) begins ending it: its stdin is closed (it says `eof`), and it waits for
      // a signal, which the SDK sends 2 s later.
      vi.waitFor(() => expect(fs.readFileSync(pidFile, "utf8")).toContain("eof"), { timeout: 60_000, interval: 20 })), 120_000)

  it("(control) a connection the sweep is not ending is ended by the scope's close before it returns", () =>
    endedWithLayer({}, () => Promise.resolve()), 120_000)
})
