// That a sandbox was built as its spec says. A spec is computed from the files as they are (contain.ts: real paths,
// links never bound), and bwrap binds by name a moment later, following links: a process of another sandbox sharing a
// writable folder could swap a folder for a link in between (`workspace/data -> /etc`), and bwrap would bind the
// link's target. So once a new sandbox's launcher is ready, and before its first call, the host reads the mount table
// of the launcher's namespace (`/proc/PID/mountinfo`, where the kernel says what is mounted where) and checks each of
// the policy's mounts: at its path, from the file system and path the spec named (the source's device and its path
// within that device, as the host's own mount table places it), read-only where it should be, a tmpfs where it should
// be. A sandbox built otherwise is stopped before it runs anything.
import * as fs from "node:fs"
import * as path from "node:path"

/** A mount the spec makes: at `at`, of `from` (a host path; undefined: a new tmpfs), read-only or not. */
export interface Mount {
  readonly at: string
  readonly from: string | undefined
  readonly ro: boolean
}

/** A mount as the kernel shows it: its device, the path within the device it shows, where, read-only, what kind. */
interface Line {
  readonly dev: string
  readonly root: string
  readonly at: string
  readonly ro: boolean
  readonly fstype: string
}

/** mountinfo's escapes (`\040` for a space, `\134` for a backslash). */
const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)))

const parse = (text: string): ReadonlyArray<Line> =>
  text.split("\n").filter((line) => line !== "").map((line) => {
    const [left = "", right = ""] = line.split(" - ")
    const f = left.split(" ")
    return { dev: f[2] ?? "", root: unescape(f[3] ?? ""), at: unescape(f[4] ?? ""), ro: (f[5] ?? "").split(",").includes("ro"), fstype: right.split(" ")[0] ?? "" }
  })

/** The index of the last item that passes `test`, or -1 (Array's `findLastIndex` is ES2023). */
const lastIndex = <A>(items: ReadonlyArray<A>, test: (item: A) => boolean): number => {
  for (let i = items.length - 1; i >= 0; i--) if (test(items[i]!)) return i
  return -1
}

/** The mounts bwrap's arguments make (`--bind`, `--ro-bind`, `--tmpfs`, `--remount-ro`), in order. */
export const mountsOf = (args: ReadonlyArray<string>): ReadonlyArray<Mount> => {
  const out: Array<Mount> = []
  for (let i = 0; i < args.length; i++) {
    const op = args[i]
    if (op === "--bind" || op === "--ro-bind") out.push({ from: args[i + 1], at: args[i + 2]!, ro: op === "--ro-bind" })
    else if (op === "--tmpfs") out.push({ from: undefined, at: args[i + 1]!, ro: false })
    else if (op === "--remount-ro") {
      const at = args[i + 1]
      const last = lastIndex(out, (m) => m.at === at)
      if (last !== -1) out[last] = { ...out[last]!, ro: true }
    } else continue
    i += op === "--tmpfs" || op === "--remount-ro" ? 1 : 2
  }
  return out
}

/** Where a host path is in the host's mount table: the device of the mount holding it, and its path within the device. */
const placeOn = (table: ReadonlyArray<Line>, p: string): { readonly dev: string; readonly root: string } | undefined => {
  let holder: Line | undefined
  for (const line of table) {
    const holds = line.at === "/" || p === line.at || p.startsWith(line.at + "/")
    if (holds && (holder === undefined || line.at.length >= holder.at.length)) holder = line
  }
  return holder === undefined ? undefined : { dev: holder.dev, root: path.posix.join(holder.root, path.posix.relative(holder.at, p)) }
}

/**
 * Whether the sandbox of the launcher `pid` holds `mounts` as planned: undefined when it does, else what differs (the
 * first mount found otherwise). The last mount at a path is the one seen there.
 */
export const differs = (pid: number, mounts: ReadonlyArray<Mount>): string | undefined => {
  let inside: ReadonlyArray<Line>
  let host: ReadonlyArray<Line>
  try {
    inside = parse(fs.readFileSync(`/proc/${pid}/mountinfo`, "utf8"))
    host = parse(fs.readFileSync("/proc/self/mountinfo", "utf8"))
  } catch (e) {
    return `its mount table could not be read (${e instanceof Error ? e.message : String(e)})`
  }
  for (const mount of mounts) {
    const seen = inside[lastIndex(inside, (line) => line.at === mount.at)]
    if (seen === undefined) return `nothing is mounted at ${mount.at}`
    if (seen.ro !== mount.ro) return `${mount.at} is ${seen.ro ? "read-only" : "writable"}`
    if (mount.from === undefined) {
      if (seen.fstype !== "tmpfs") return `${mount.at} is not an empty tmpfs`
      continue
    }
    const planned = placeOn(host, mount.from)
    if (planned === undefined || seen.dev !== planned.dev || seen.root !== planned.root) {
      return `${mount.at} shows ${seen.root} (device ${seen.dev}), not ${mount.from}`
    }
  }
  return undefined
}
