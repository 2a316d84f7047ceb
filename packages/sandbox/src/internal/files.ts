/**
 * What the sandbox asks the file system about a path, without throwing: its real path, whether an entry is there
 * (a link counts, dangling or not), and what it is (links followed, except by `isLink`); the walk of a folder's
 * entries, and where the host's tools are looked up.
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** The real path (every link resolved), or undefined when it cannot be resolved (missing, a dangling link, a loop). */
export const real = (p: string): string | undefined => {
  try {
    return fs.realpathSync.native(p)
  } catch {
    return undefined
  }
}

/** Whether an entry is there, a link included (not followed). */
export const exists = (p: string): boolean => {
  try {
    fs.lstatSync(p)
    return true
  } catch {
    return false
  }
}

const statIs = (p: string, test: (stat: fs.Stats) => boolean, follow: boolean): boolean => {
  try {
    return test(follow ? fs.statSync(p) : fs.lstatSync(p))
  } catch {
    return false
  }
}

export const isFile = (p: string): boolean => statIs(p, (s) => s.isFile(), true)
export const isDirectory = (p: string): boolean => statIs(p, (s) => s.isDirectory(), true)
export const isLink = (p: string): boolean => statIs(p, (s) => s.isSymbolicLink(), false)

/** Where the tools of containment are looked up: never the caller's PATH. */
export const TOOL_PATH = ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"]
export const which = (name: string): string | undefined => TOOL_PATH.map((d) => path.join(d, name)).find((p) => {
  try {
    fs.accessSync(p, fs.constants.X_OK)
    return true
  } catch {
    return false
  }
})

/** Visits the entries below `root` (links not followed); `visit` returning false skips a folder's contents. */
export const walk = (root: string, limit: { left: number }, visit: (entry: string, stat: fs.Stats) => boolean): void => {
  let entries: Array<string>
  try {
    entries = fs.readdirSync(root)
  } catch {
    return
  }
  for (const name of entries) {
    if (--limit.left < 0) throw new TooMany()
    const entry = path.join(root, name)
    let stat: fs.Stats
    try {
      stat = fs.lstatSync(entry)
    } catch {
      continue
    }
    if (visit(entry, stat) && stat.isDirectory()) walk(entry, limit, visit)
  }
}

/** Thrown by `walk` when the folders hold more entries than its limit. */
export class TooMany extends Error {}
