// The file system rules: a path is allowed when its real path (every `..` and symlink resolved, link chains
// included) matches the policy's globs and has no hidden component; reads and writes then open the file without
// following a link swapped in after the check, and compare what they opened with what was checked.
//
// Paths are taken literally: no URL-decoding (`%2e%2e` is a name), no Unicode normalisation (a full-width letter
// is another letter). Globs are matched with picomatch against absolute paths (the patterns resolved against the
// base directory).
import * as fs from "node:fs"
import * as path from "node:path"
import picomatch from "picomatch"
import type { FsRule } from "../Policy.js"
import { isLink } from "./files.js"

/** A decision: allowed with the real path, or denied with a reason a person can act on. */
export type PathDecision =
  | { readonly ok: true; readonly real: string; readonly relative: string; readonly stat: fs.Stats | undefined }
  | { readonly ok: false; readonly reason: string }

const deny = (reason: string): PathDecision => ({ ok: false, reason })

const posix = (p: string) => p.split(path.sep).join(path.posix.sep)

/**
 * A matcher for the rule's globs: a relative glob is matched against the path relative to `baseDir` (so the base
 * directory's own name, whatever characters it holds, is never read as a pattern), an absolute one against the
 * absolute path. `**` never matches `..`: nothing outside the base directory matches a relative glob unless the
 * glob climbs out itself (`../shared/**`).
 */
export const matcherOf = (baseDir: string, globs: ReadonlyArray<string>): ((absolute: string) => boolean) => {
  // dot: the hidden-file rule is ours, so that `deny_hidden: false` really allows them.
  const compile = (patterns: ReadonlyArray<string>) => (patterns.length === 0 ? () => false : picomatch([...patterns], { dot: true }))
  const relative = compile(globs.filter((g) => !path.isAbsolute(g)).map((g) => path.posix.normalize(posix(g))))
  const absolute = compile(globs.filter((g) => path.isAbsolute(g)).map(posix))
  return (p) => absolute(posix(p)) || relative(posix(path.relative(baseDir, p)) || ".")
}

/** Path separators: `/`, and `\\` on Windows only (elsewhere a backslash is a character of a name). */
const SEPARATOR = path.sep === "\\" ? /[\\/]/ : /\//

/**
 * `p` (relative to `from`, or absolute) resolved as the system resolves it, not lexically: each component in turn,
 * a link replaced by its target before the next `..` applies (`link/../x` is the link target's sibling, as `cat`
 * would open it, not `x` next to the link). Components from the first missing one on are joined as written.
 */
export const physical = (from: string, p: string): string => {
  let current = path.isAbsolute(p) ? path.parse(path.resolve(p)).root : from
  let missing = false
  for (const part of p.split(SEPARATOR).filter((c) => c !== "" && c !== ".")) {
    if (part === "..") {
      current = path.dirname(current)
      continue
    }
    current = path.join(current, part)
    if (missing) continue
    try {
      current = fs.realpathSync.native(current)
    } catch (e) {
      // A dangling link or a loop stays as written, for the caller to name; a missing entry ends the resolution.
      if (errno(e) === "ENOENT" && !isLink(current)) missing = true
    }
  }
  return current
}

/**
 * Where an entry `p` names would be, for a write: its directory resolved as the system resolves it (`physical`), its
 * own name kept, so that a link there is seen as a link and not followed.
 */
export const physicalEntry = (from: string, p: string): string => {
  const parts = p.split(SEPARATOR)
  const name = parts.pop()
  if (name === undefined || name === "" || name === "." || name === "..") return physical(from, p)
  return path.join(physical(from, parts.join("/") || (path.isAbsolute(p) ? path.sep : ".")), name)
}

export const hiddenComponent = (relative: string): string | undefined =>
  relative.split(/[\\/]/).find((part) => part.startsWith(".") && part !== "." && part !== "..")

const describe = (base: string, p: string) => {
  const rel = path.relative(base, p)
  return rel === "" ? "." : rel === ".." || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel) ? p : rel
}

const errno = (e: unknown): string | undefined => (e instanceof Error && "code" in e && typeof e.code === "string" ? e.code : undefined)

/**
 * Checks `requested` (relative to `baseDir`, or absolute) for reading: it must exist, its real path must match
 * the rule and have no hidden component (nor may the path as requested), and it must be a regular file.
 */
/** A read over the cap: a denial naming it, as a write over the cap is. */
export const overReadCap = (relative: string, size: number, max: number) => `${relative} is ${size} bytes, over fs.read's max_bytes (${max})`

/** Whether a path ends as a folder's does (`notes.txt/`, `notes.txt/.`): the system then requires a directory. */
const namesFolder = (requested: string): boolean => (path.sep === "\\" ? /[\\/]\.?$/ : /\/\.?$/).test(requested)

export const checkRead = (baseDir: string, rule: FsRule, requested: string, options: { readonly directories?: boolean } = {}): PathDecision => {
  if (requested.includes("\u0000")) return deny("the path contains a NUL byte")
  const decided = checkReadResolved(baseDir, rule, requested, options)
  // A trailing slash asks for a directory: on a file the system says ENOTDIR (never a lexical resolution that drops it).
  if (decided.ok && namesFolder(requested) && decided.stat !== undefined && !decided.stat.isDirectory()) {
    return deny(`${requested}: not a directory (ENOTDIR): a trailing slash names a folder, and ${decided.relative} is a file`)
  }
  return decided
}

const checkReadResolved = (baseDir: string, rule: FsRule, requested: string, options: { readonly directories?: boolean }): PathDecision => {
  if (rule.deny_hidden) {
    const hidden = hiddenComponent(path.relative(baseDir, path.resolve(baseDir, requested)))
    if (hidden !== undefined) return deny(`${requested} is hidden (${hidden}); hidden files are denied (deny_hidden)`)
  }
  const absolute = physical(baseDir, requested)
  let real: string
  try {
    real = fs.realpathSync.native(absolute)
  } catch (e) {
    const code = errno(e)
    if (code === "ENOENT") {
      // A link whose target is missing is denied as such; a path that is simply absent is not found.
      let link: fs.Stats | undefined
      try {
        link = fs.lstatSync(absolute)
      } catch {
        link = undefined
      }
      return link?.isSymbolicLink() === true ? deny(`${requested} is a dangling link`) : deny(`${requested} does not exist`)
    }
    if (code === "ELOOP") return deny(`${requested} is a link loop`)
    return deny(`${requested} cannot be resolved (${code ?? "error"})`)
  }
  return decideReal(baseDir, rule, requested, real, true, options.directories === true)
}

/** The rule applied to a real (fully resolved) path. */
const decideReal = (baseDir: string, rule: FsRule, requested: string, real: string, mustExist: boolean, directories = false): PathDecision => {
  const relative = describe(baseDir, real)
  if (rule.deny_hidden) {
    const hidden = hiddenComponent(path.relative(baseDir, real))
    if (hidden !== undefined) return deny(`${requested} resolves to ${relative}, which is hidden (${hidden}); hidden files are denied`)
  }
  if (!matcherOf(baseDir, rule.paths)(real)) {
    return deny(`${requested} resolves to ${relative}, which is outside the allowed paths (${rule.paths.join(", ") || "none"})`)
  }
  let stat: fs.Stats | undefined
  try {
    stat = fs.statSync(real)
  } catch (e) {
    if (mustExist || errno(e) !== "ENOENT") return deny(`${requested} cannot be read (${errno(e) ?? "error"})`)
    stat = undefined
  }
  if (stat !== undefined && !stat.isFile() && !(directories && stat.isDirectory())) {
    const kind = stat.isDirectory() ? "a directory" : stat.isFIFO() ? "a FIFO" : stat.isSocket() ? "a socket" : stat.isCharacterDevice() || stat.isBlockDevice() ? "a device" : "not a regular file"
    return deny(`${requested} is ${kind}; only regular files are allowed`)
  }
  return { ok: true, real, relative, stat }
}

/**
 * Checks `requested` for writing: its directory must exist; the target (the real directory joined with the name)
 * must match the rule and not be hidden; an existing target must be a regular file and not a link (a write never
 * goes through a link).
 */
export const checkWrite = (baseDir: string, rule: FsRule, requested: string): PathDecision => {
  if (requested.includes("\u0000")) return deny("the path contains a NUL byte")
  const name = requested.split(SEPARATOR).pop() ?? ""
  if (name === "" || name === "." || name === "..") return deny(`${requested} names no file`)
  if (rule.deny_hidden) {
    const hidden = hiddenComponent(path.relative(baseDir, path.resolve(baseDir, requested)))
    if (hidden !== undefined) return deny(`${requested} is hidden (${hidden}); hidden files are denied (deny_hidden)`)
  }
  let dir: string
  try {
    dir = fs.realpathSync.native(physical(baseDir, requested.slice(0, requested.length - name.length) || "."))
  } catch (e) {
    return deny(`the directory of ${requested} does not exist or cannot be resolved (${errno(e) ?? "error"})`)
  }
  const target = path.join(dir, name)
  let link: fs.Stats | undefined
  try {
    link = fs.lstatSync(target)
  } catch {
    link = undefined
  }
  if (link?.isSymbolicLink() === true) return deny(`${requested} is a link; a write never goes through a link`)
  const decision = decideReal(baseDir, rule, requested, target, false)
  if (decision.ok && decision.stat !== undefined && decision.stat.nlink > 1) return deny(`${requested} has other hard links; a write through it would change them too`)
  return decision
}

/** Where an open file descriptor really is (Linux: /proc/self/fd), or undefined where that cannot be known. */
const openedPath = (fd: number): string | undefined => {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`)
  } catch {
    return undefined
  }
}

type Opened = { readonly fd: number } | { readonly denied: string } | { readonly error: string }

/**
 * Opens the checked file without following a link, and never outside the checked directory. Where /proc is
 * available (Linux), the directory is opened first (not following a link), verified to be the one checked, and the
 * file is opened relative to that descriptor (`/proc/self/fd/N/name`, openat's semantics): a directory swapped for a
 * link after the check cannot send the open, or a created file, elsewhere. Elsewhere the file is opened by its path
 * with `O_NOFOLLOW`, and the caller compares what was opened with what was checked.
 */
const openChecked = (decision: Extract<PathDecision, { ok: true }>, flags: number, what: string): Opened => {
  const dir = path.dirname(decision.real)
  let dirFd: number | undefined
  try {
    dirFd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW)
  } catch (e) {
    const code = errno(e)
    if (code === "ELOOP" || code === "ENOTDIR" || code === "ENOENT") return { denied: `${decision.relative} changed between the check and the open (its directory moved)` }
    return { error: `cannot open the directory of ${decision.relative} (${code ?? "error"})` }
  }
  try {
    const where = openedPath(dirFd)
    if (where !== undefined && where !== dir) return { denied: `${decision.relative} changed between the check and the open (its directory moved)` }
    const target = where === undefined ? decision.real : `/proc/self/fd/${dirFd}/${path.basename(decision.real)}`
    try {
      return { fd: fs.openSync(target, flags | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK, 0o644) }
    } catch (e) {
      const code = errno(e)
      return code === "ELOOP" ? { denied: `${decision.relative} became a link after the check` } : { error: `cannot open ${decision.relative}${what} (${code ?? "error"})` }
    }
  } finally {
    fs.closeSync(dirFd)
  }
}

/** A read that passed the check: the bytes of the very file that was checked, within the cap. */
export const readChecked = (decision: Extract<PathDecision, { ok: true }>, maxBytes: number): { readonly bytes: Buffer } | { readonly denied: string } | { readonly error: string } => {
  // O_NONBLOCK: a FIFO swapped in after the check cannot block the open.
  const opened = openChecked(decision, fs.constants.O_RDONLY, "")
  if (!("fd" in opened)) return opened
  const fd = opened.fd
  try {
    const stat = fs.fstatSync(fd)
    const checked = decision.stat
    const actual = openedPath(fd)
    if (!stat.isFile() || checked === undefined || stat.ino !== checked.ino || stat.dev !== checked.dev || (actual !== undefined && actual !== decision.real)) {
      return { denied: `${decision.relative} changed between the check and the open` }
    }
    if (stat.size > maxBytes) return { denied: overReadCap(decision.relative, stat.size, maxBytes) }
    const buffer = Buffer.alloc(Math.min(stat.size + 1, maxBytes + 1))
    let total = 0
    for (;;) {
      const n = fs.readSync(fd, buffer, total, buffer.length - total, null)
      if (n === 0) break
      total += n
      if (total > maxBytes) return { denied: `${decision.relative} grew over fs.read's max_bytes (${maxBytes}) while it was read` }
      if (total === buffer.length) break
    }
    return { bytes: buffer.subarray(0, total) }
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * A write that passed the check: opens (creating it if need be) the very file that was checked, inside the very
 * directory that was checked (see `openChecked`), without following a link; verifies that the file opened is the
 * one checked (where the descriptor really points, and its inode) before anything is truncated or written. With
 * /proc (Linux) the open is pinned to the checked directory, so nothing is created elsewhere; without it, a write
 * whose directory was swapped for a link between the check and the open is refused, and the empty file the open
 * created there is removed.
 */
export const writeChecked = (decision: Extract<PathDecision, { ok: true }>, content: Buffer): { readonly bytes: number } | { readonly denied: string } | { readonly error: string } => {
  const opened = openChecked(decision, fs.constants.O_WRONLY | fs.constants.O_CREAT, " for writing")
  if (!("fd" in opened)) return opened
  const fd = opened.fd
  try {
    const stat = fs.fstatSync(fd)
    const actual = openedPath(fd)
    let elsewhere = actual !== undefined && actual !== decision.real
    if (actual === undefined) {
      // Without /proc: the directory must still resolve to where it did, and hold the file opened.
      try {
        const at = fs.lstatSync(decision.real)
        elsewhere = fs.realpathSync.native(path.dirname(decision.real)) !== path.dirname(decision.real) || at.ino !== stat.ino || at.dev !== stat.dev
      } catch {
        elsewhere = true
      }
    }
    const replaced = decision.stat !== undefined && (decision.stat.ino !== stat.ino || decision.stat.dev !== stat.dev)
    if (!stat.isFile() || elsewhere || replaced || stat.nlink > 1) {
      // Without /proc the open was not pinned: a file it created (empty, not there at the check) is removed from
      // where it landed, found by the same path, if it is still that file.
      if (actual === undefined && decision.stat === undefined && stat.isFile() && stat.size === 0) {
        try {
          const there = fs.lstatSync(decision.real)
          if (there.ino === stat.ino && there.dev === stat.dev) fs.unlinkSync(decision.real)
        } catch {
          // nothing to remove
        }
      }
      return { denied: `${decision.relative} changed between the check and the open` }
    }
    fs.ftruncateSync(fd, 0)
    fs.writeSync(fd, content)
    return { bytes: content.length }
  } finally {
    fs.closeSync(fd)
  }
}
