// What a sandbox's launcher cannot see with shell builtins, checked from the host between calls, through
// /proc/PID/root of the launcher (the host owns the sandbox's user namespace, so it may look into the launcher's mount
// namespace although the launcher is not dumpable): the full permission bits of /tmp and HOME (`chmod 0777 "$HOME"`
// changes what gpg or ssh do; the launcher's `test` sees only its own access), and that /tmp's tmpfs has all its blocks
// free (a deleted file kept open, by an fd in flight or anything else, shows no name but fills /tmp). And, against what
// was recorded when the launcher was ready (`record`), the change times (ns) of /tmp, HOME, /dev/shm and the folders
// bwrap made on /tmp's tmpfs (a chmod, utimes, an extended attribute or a default ACL moves them: `touch -d`, an
// xattr read back, a default ACL that makes the next call's files mode 0) and the free inodes of /tmp and /dev/shm
// (extended attributes take inodes, not blocks), and /dev/shm's mode (1777) and free space.
import * as fs from "node:fs"
import { SANDBOX_HOME } from "./contain.js"

/** The modes bwrap gives /tmp (`--perms 1777 --tmpfs`) and HOME (`--dir`: 0755). */
const TMP_MODE = 0o1777
const HOME_MODE = 0o755

/** The host pid of the process a sandbox's outer bwrap (`outer`) started: with `--as-pid-1`, the launcher. */
export const launcherPid = (outer: number): number | undefined => {
  try {
    const first = fs.readFileSync(`/proc/${outer}/task/${outer}/children`, "utf8").trim().split(" ")[0]
    return first === undefined || first === "" ? undefined : Number(first)
  } catch {
    return undefined
  }
}

/** What a sandbox's folders were when its launcher was ready: the change time (ns) of each, and free inodes. */
export interface Baseline {
  readonly changed: ReadonlyArray<bigint>
  readonly tmpFiles: number
  readonly shmFiles: number
}

/** The folders whose change time is recorded: /tmp, HOME, /dev/shm, then `made` (the folders bwrap made on /tmp). */
const folders = (made: ReadonlyArray<string>): ReadonlyArray<string> => ["/tmp", SANDBOX_HOME, "/dev/shm", ...made]

/** Records the baseline of the launcher `pid`'s sandbox (undefined when it cannot be read: the sandbox is not kept). */
export const record = (pid: number, made: ReadonlyArray<string>): Baseline | undefined => {
  const root = `/proc/${pid}/root`
  try {
    return {
      changed: folders(made).map((f) => fs.lstatSync(`${root}${f}`, { bigint: true }).ctimeNs),
      tmpFiles: fs.statfsSync(`${root}/tmp`).ffree,
      shmFiles: fs.statfsSync(`${root}/dev/shm`).ffree
    }
  } catch {
    return undefined
  }
}

/** Whether the sandbox of the launcher `pid` has /tmp, HOME and /dev/shm as bwrap made them and as `baseline` saw them. */
export const pristine = (pid: number, made: ReadonlyArray<string>, baseline: Baseline): boolean => {
  const root = `/proc/${pid}/root`
  try {
    const tmp = fs.lstatSync(`${root}/tmp`)
    const home = fs.lstatSync(`${root}${SANDBOX_HOME}`)
    const shm = fs.lstatSync(`${root}/dev/shm`)
    const space = fs.statfsSync(`${root}/tmp`)
    const shmSpace = fs.statfsSync(`${root}/dev/shm`)
    const now = record(pid, made)
    return tmp.isDirectory() && (tmp.mode & 0o7777) === TMP_MODE && home.isDirectory() && (home.mode & 0o7777) === HOME_MODE &&
      shm.isDirectory() && (shm.mode & 0o7777) === TMP_MODE && space.bfree === space.blocks && shmSpace.bfree === shmSpace.blocks &&
      now !== undefined && now.tmpFiles === baseline.tmpFiles && now.shmFiles === baseline.shmFiles &&
      now.changed.length === baseline.changed.length && now.changed.every((t, i) => t === baseline.changed[i])
  } catch {
    return false
  }
}
