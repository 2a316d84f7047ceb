// What the sandbox's test files share: the handler context and their temp folders.
import { Tenant, type Tool } from "@artana/core"
import { type Policy, Sandbox } from "@artana/sandbox"
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, expect, onTestFinished } from "vitest"

/** The context a handler gets; these tests call the tools directly, as the kernel would. */
export const context: Tool.ToolContext = {
  runId: "r",
  tenant: Tenant.TenantContext.make({ tenantId: "t", capabilities: [], budgetUsdLimit: 1 }),
  idempotencyKey: "k",
  stepKey: "tool:0",
  fence: 1,
  signal: new AbortController().signal,
  lease: { expiresAt: () => Number.POSITIVE_INFINITY, signal: new AbortController().signal }
}

/**
 * A new folder `artana-sandbox-<name>-*` under the system's temp folder (its real path): made in a test, removed when
 * that test ends; made at a file's top level, removed after the file's tests. (An `afterAll` registered from inside a
 * running test never runs, which is how these folders used to be left behind.)
 */
export const tempFolder = (name: string): string => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `artana-sandbox-${name}-`)))
  const remove = () => fs.rmSync(dir, { recursive: true, force: true })
  if (expect.getState().currentTestName === undefined) afterAll(remove)
  else onTestFinished(remove)
  return dir
}

/** shell.run's containment fields at their defaults (contained by bubblewrap), for rules written out in full. */
export const contained = { containment: "bubblewrap", max_memory_bytes: 4_294_967_296, max_processes: 128, max_file_bytes: 67_108_864 } as const

/**
 * The same, uncontained (`containment: none`): the argument rules (paths in arguments, git's options and repositories)
 * are what holds such a command, and the tests written for them run it so.
 */
export const uncontained = { ...contained, containment: "none" } as const

/** One `sh -c` call under `p`, in a sandbox of its own making: what it printed (stdout and stderr), or `ERROR <reason>` when the call failed. */
export const sh = async (p: Policy.Policy, script: string): Promise<string> => {
  const tool = Sandbox.tools(p).find((t) => t.name === "shell.run")!
  const out = await Effect.runPromise(Effect.either(tool.invoke({ command: "sh", args: ["-c", script] }, context)))
  if (Either.isLeft(out)) return `ERROR ${out.left.message}`
  const r = out.right as { readonly stdout: string; readonly stderr: string }
  return r.stdout + r.stderr
}
