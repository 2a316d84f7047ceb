// A server that hangs on `initialize` or `tools/list` is given up on at the config's `timeout_ms` (not the SDK's 60 s
// default), and its process is killed: the pid is gone when the listing fails, before the layer's scope ends.
import { describe, expect, it } from "vitest"
import { Effect, Either } from "effect"
import { McpServers, McpTools } from "@artana/mcp"
import * as fs from "node:fs"
import * as path from "node:path"
import { packageDir, tempFolder } from "./helpers.js"

const dir = tempFolder("timeouts")

/** Whether a process is running: `kill(pid, 0)` fails with ESRCH once it is gone (and reaped). */
const running = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    if (e instanceof Error && "code" in e && e.code === "ESRCH") return false
    throw e
  }
}

/** Lists the server's tools, and whether its process (pid from `pidFile`) still runs right after, inside the layer. */
const listThenCheck = (server: Record<string, unknown>, pidFile: string) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const service = yield* McpServers.McpServers
    const listed = Either.mapLeft(yield* Effect.either(McpTools.list(service)), (e) => ({ _tag: e._tag, server: e.server, reason: e.reason }))
    const pid = Number(fs.readFileSync(pidFile, "utf8").trim())
    return { listed, pid, runningAfter: running(pid) }
  }).pipe(Effect.provide(McpServers.layer({ servers: [server] })))))

describe("MCP servers that hang before any call", () => {
  it("a server that never answers initialize fails at its timeout_ms, and its process is killed", async () => {
    const pidFile = path.join(dir, "sleep.pid")
    // The process is `sleep 600` (exec keeps the pid the transport spawned): it never reads its stdin.
    const server = { name: "sleepy", command: "sh", args: ["-c", `echo $$ > '${pidFile}'; exec sleep 600`], timeout_ms: 3000 }
    const { listed, pid, runningAfter } = await listThenCheck(server, pidFile)
    expect(Either.isLeft(listed) && listed.left).toEqual({
      _tag: "McpServerError",
      server: "sleepy",
      reason: "did not answer initialize within its timeout_ms (3000 ms)"
    })
    expect(pid).toBeGreaterThan(0)
    expect(runningAfter).toBe(false)
  })

  it("a server that never answers tools/list fails at its timeout_ms, and its process is killed", async () => {
    const pidFile = path.join(dir, "list.pid")
    const server = { name: "lister", command: process.execPath, args: [path.join(packageDir, "test/fixtures/hangList.mjs"), pidFile], timeout_ms: 5000 }
    const { listed, pid, runningAfter } = await listThenCheck(server, pidFile)
    expect(Either.isLeft(listed) && listed.left).toEqual({
      _tag: "McpServerError",
      server: "lister",
      reason: "did not list its tools within its timeout_ms (5000 ms)"
    })
    expect(pid).toBeGreaterThan(0)
    expect(runningAfter).toBe(false)
  })
})
