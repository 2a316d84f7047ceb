// The README examples marked `<!-- checked-example: NAME -->` (the root README's "In code", core's tables of the
// seed's names and of the Trikernel decisions, each package's usage), as written: compiled together (strict, NodeNext)
// and each run in a process of its own, in a temp dir inside this package so that `@artana/*` resolves as it does for a
// user. `<!-- checked-example: NAME compile-only -->` marks one that needs a network model, an MCP server process or a
// database server: compiled, not run. The format is the install test's (`apps/packaging/test/readmes.ts`).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { execFile } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { Artana } from "@artana/core"
import { ScriptedModel } from "@artana/core/testing"
import { SqliteStore } from "@artana/store-sqlite"

// Asynchronous children: a synchronous one would block this worker's event loop, and with it vitest's own messages.
const run = promisify(execFile)

const REPO = fileURLToPath(new URL("../../../", import.meta.url))
const HERE = fileURLToPath(new URL("../", import.meta.url))

interface Example {
  readonly file: string
  readonly name: string
  readonly code: string
  readonly compileOnly: boolean
}

/** The fenced `ts` blocks right after a `<!-- checked-example: NAME -->` (or `NAME compile-only`) line. */
export const checkedExamples = (file: string): ReadonlyArray<Example> =>
  [...readFileSync(join(REPO, file), "utf8").matchAll(/<!-- checked-example: ([\w.-]+)( compile-only)? -->\r?\n```ts\r?\n([\s\S]*?)\r?\n```/g)]
    .map((m) => ({ file, name: m[1]!, compileOnly: m[2] !== undefined, code: m[3]! }))

/** The READMEs that may hold checked examples: the root's and every package's. */
const READMES = ["README.md", ...readdirSync(join(REPO, "packages")).sort().map((d) => `packages/${d}/README.md`)]
  .filter((file) => existsSync(join(REPO, file)))

const examples = READMES.flatMap(checkedExamples)

/** What each example prints (its last line), so that an example that runs but does the wrong thing fails. */
const prints: Record<string, string> = {
  "readme-effect": "approved: true",
  "readme-promise": "approved: true",
  "seed-chat": "Paris",
  "seed-tool": "PolicyDenied, ToolFailed",
  "seed-pause-resume": "paused -> refunded",
  "seed-agent": "EMEA grew 12%",
  "seed-context-builder": "FACT: dates are YYYY-MM-DD",
  "seed-auto-reflect": "fact: book_flight takes dates as YYYY-MM-DD",
  "trikernel-swap": "RunStarted ModelRequested ModelCompleted RunCompleted",
  "approval": "paused -> Sent 250",
  "agent-analyst": "EMEA grew 26.9% over 2024 (3 turns)",
  "experience-rules": "fact: book_flight takes dates as YYYY-MM-DD (+1); anti_pattern: Do not guess the year (+0)",
  "experience-agent": "fact: book_flight takes dates as YYYY-MM-DD",
  "middleware-governed": "bank.transfer denied by capability-guard (needs finance:write)",
  "sandbox-use": "fs.read denied: /etc/passwd resolves to /etc/passwd, which is outside the allowed paths (workspace/**)",
  "worker-session": "paused -> approved",
  "store-sqlite-use": "completed: greet-1",
  "store-sqlite-promise": "completed, chain intact: true",
  "store-sqlite-sync-off-loop": "20 runs completed",
  "openai-fake": "Paris after /v1/chat/completions, /v1/chat/completions",
  "anthropic-fake": "Paris after /v1/messages, /v1/messages",
  "otel-receiver": "artana.run: true, artana.model: true, content exported: false",
  "plugin-test": "{\"city\":\"Oslo\",\"high\":21}; empty city: true"
}

/**
 * The root README's "In code" is governed by what its run logged, not only by its text: the tenant's capabilities and
 * budget recorded at the start, no model request carrying the prompt's email (the PII scrubber's note beside each),
 * the capability-gated tool run, and a chain that verifies.
 */
const governedLog = async (cwd: string) => {
  const artana = Artana.create({ store: SqliteStore.layer({ filename: join(cwd, "artana.db") }), model: ScriptedModel.layer([]) })
  try {
    const [run, ...others] = await artana.listRuns("acme")
    expect(others).toEqual([])
    expect(run).toMatchObject({ status: "completed", workflow: "artana.chat" })
    const ref = { tenantId: "acme", runId: run!.runId }
    const events = (await artana.readEvents(ref)).map((e) => e.payload)
    expect(events[0]).toMatchObject({ _tag: "RunStarted", tenant: { capabilities: ["finance:read"], budgetUsdLimit: 5 } })
    const requests = events.filter((p) => p._tag === "ModelRequested")
    expect(requests).toHaveLength(2)
    for (const request of requests) expect(JSON.stringify(request)).not.toContain("ann@acme.example")
    expect(events.filter((p) => p._tag === "MiddlewareNote" && p.middleware === "pii" && p.note === "scrubbed")).toHaveLength(2)
    expect(events.filter((p) => p._tag === "ToolCompleted").map((p) => p._tag === "ToolCompleted" && p.tool)).toEqual(["get_balance"])
    expect((await artana.verify(ref)).ok).toBe(true)
  } finally {
    await artana.close()
  }
}

let dir = ""
beforeAll(() => {
  dir = mkdtempSync(join(HERE, ".checked-examples-"))
  for (const e of examples) writeFileSync(join(dir, `${e.name}.ts`), `${e.code}\n`)
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
    extends: "../../../tsconfig.base.json",
    compilerOptions: { noEmit: true, composite: false, declaration: false, declarationMap: false, sourceMap: false, incremental: false },
    include: ["*.ts"]
  }))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("README examples, as written", () => {
  it("there are examples, with unique names", () => {
    expect(examples.map((e) => e.name)).toEqual([...new Set(examples.map((e) => e.name))])
    expect(examples.map((e) => e.name)).toEqual(expect.arrayContaining(Object.keys(prints)))
  })

  it("every example that runs says what it prints; a compile-only one is not run, so it has no line", () => {
    expect(examples.filter((e) => !e.compileOnly && prints[e.name] === undefined).map((e) => `${e.file}: ${e.name}`)).toEqual([])
    expect(examples.filter((e) => e.compileOnly && prints[e.name] !== undefined).map((e) => `${e.file}: ${e.name}`)).toEqual([])
  })

  it("every row of core's table of the seed's names points at a checked example", () => {
    const readme = readFileSync(join(REPO, "packages/core/README.md"), "utf8")
    const table = readme.slice(readme.indexOf("## The seed's names"), readme.indexOf("## The Trikernel decisions"))
    const rows = table.split("\n").filter((l) => l.startsWith("| `") && !l.startsWith("| seed"))
    expect(rows).toHaveLength(7)
    for (const row of rows) {
      const name = row.match(/\| `(seed-[\w-]+)` \|$/)?.[1]
      expect(name, row).toBeDefined()
      expect(examples.map((e) => e.name)).toContain(name)
    }
  })

  it("every row of core's Trikernel table names a test file and a test in it that exist", () => {
    const readme = readFileSync(join(REPO, "packages/core/README.md"), "utf8")
    const table = readme.slice(readme.indexOf("## The Trikernel decisions"), readme.indexOf("<!-- checked-example: trikernel-swap -->"))
    const rows = table.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| decision") && !l.startsWith("|---"))
    expect(rows).toHaveLength(8)
    for (const row of rows) {
      const tests = row.split(" | ")[2]!
      // `file` "name", "name"; `file` "name" ...: each file followed by the names of tests in it ("..." ends a cut name).
      const cited = [...tests.matchAll(/`([\w/.-]+\.(?:test\.)?ts)`((?:[ ,]*"[^"]+")*)/g)]
      expect(cited.length, row).toBeGreaterThan(0)
      for (const [, file, names] of cited) {
        const source = readFileSync(join(REPO, "packages", file!), "utf8")
        const titles = [...names!.matchAll(/"([^"]+)"/g)].map((m) => m[1]!.replace(/\.\.\.$/, ""))
        expect(titles.length, `${file} in: ${row}`).toBeGreaterThan(0)
        for (const title of titles) expect(source, `${file}: "${title}"`).toContain(title)
      }
    }
  })

  it("all compile (strict, NodeNext)", async () => {
    const tsc = await run(process.execPath, [join(REPO, "node_modules/typescript/bin/tsc"), "-p", dir], { encoding: "utf8" }).catch(
      (e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? "", stderr: e.stderr ?? "failed" })
    )
    expect(tsc.stdout + tsc.stderr).toBe("")
  }, 180_000)

  it("the root README's \"In code\": governed (its run's log is checked too), at most 20 lines and 5 Artana names, Effect and Promise alike", () => {
    for (const name of ["readme-effect", "readme-promise"]) {
      const code = examples.find((e) => e.name === name)!.code
      expect(code.split("\n").length).toBeLessThanOrEqual(20)
      const names = [...code.matchAll(/^import \{ ([^}]+) \} from "@artana\/[^"]+"$/gm)].flatMap((m) => m[1]!.split(",").map((n) => n.trim()))
      expect(names.length).toBeLessThanOrEqual(5)
      // Governed: a capability on the tool and the tenant, a budget, the PII scrubber.
      expect(code).toContain("requiresCapability")
      expect(code).toContain("budgetUsdLimit")
      expect(code).toContain("Pii.middleware()")
    }
  })

  for (const e of examples.filter((e) => !e.compileOnly)) {
    it(`${e.file}: ${e.name} runs`, async () => {
      const cwd = join(dir, `run-${e.name}`)
      mkdirSync(cwd)
      const { stdout: out } = await run(process.execPath, ["--import", "tsx", join(dir, `${e.name}.ts`)], { cwd, encoding: "utf8", timeout: 120_000 })
      expect(out.trim().split("\n").pop()).toBe(prints[e.name])
      if (e.name === "readme-effect" || e.name === "readme-promise") await governedLog(cwd)
    }, 150_000)
  }
})
