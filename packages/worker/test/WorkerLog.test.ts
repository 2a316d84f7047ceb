import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, LogLevel } from "effect"
import { WorkerLog } from "@artana/worker"
import * as fs from "node:fs"
import * as path from "node:path"
import { cleanup, tempDir } from "./helpers.js"

afterAll(cleanup)

describe("WorkerLog", () => {
  it.live("errors go to the file as JSON lines, rotated by size and capped in number of files", () =>
    Effect.gen(function*() {
      const directory = tempDir()
      const program = Effect.gen(function*() {
        yield* Effect.logInfo("not in the file")
        for (let i = 0; i < 60; i++) {
          yield* Effect.logError(`task failed: ${"x".repeat(80)}`).pipe(Effect.annotateLogs({ taskId: `t-${i}` }))
          // rotating-file-stream checks the size as writes complete; let each land.
          yield* Effect.sleep("2 millis")
        }
      })
      yield* Effect.provide(program, WorkerLog.layer({ directory, maxSize: "1K", maxFiles: 2, consoleLevel: LogLevel.None }))
      const files = fs.readdirSync(directory).filter((f) => f.startsWith("artana-worker-errors.log")).sort()
      expect(files).toEqual(["artana-worker-errors.log", "artana-worker-errors.log.1", "artana-worker-errors.log.2"])
      for (const file of files) expect(fs.statSync(path.join(directory, file)).size).toBeLessThan(2048)
      const lines = fs.readFileSync(path.join(directory, "artana-worker-errors.log.1"), "utf8").trim().split("\n")
      const entries = lines.map((line) => JSON.parse(line))
      expect(entries.length).toBeGreaterThan(0)
      for (const entry of entries) {
        expect(entry).toMatchObject({ logLevel: "ERROR", message: expect.stringContaining("task failed") })
        expect(entry.annotations.taskId).toMatch(/^t-\d+$/)
      }
      // Oldest to newest: .2, .1, then the current file (empty right after a rotation). The oldest entries were
      // dropped with the file that would have been .3.
      const read = (file: string) => fs.readFileSync(path.join(directory, file), "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
      const kept: Array<number> = [...files].reverse().flatMap(read).map((e) => Number(e.annotations.taskId.slice(2)))
      expect(kept.at(-1)).toBe(59)
      expect(kept).toEqual([...kept].sort((a, b) => a - b))
      expect(kept[0]).toBeGreaterThan(0)
    }))
})
