/**
 * What the sandbox asks the file system about a path, without throwing: its real path, whether an entry is there
 * (a link counts, dangling or not), and what it is (links followed, except by `isLink`).
 */
import * as fs from "node:fs"

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
