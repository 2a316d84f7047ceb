// What a sandbox's launcher cannot see with shell builtins, checked from the host between calls, through
// /proc/PID/root of the launcher (the host owns the sandbox's user namespace, so it may look into the launcher's mount
// namespace although the launcher is not dumpable): the full permission bits of /tmp and HOME (`chmod 0777 "$HOME"`
// changes what gpg or ssh do; the launcher's `test` sees only its own access), and that /tmp's tmpfs has all its blocks
// free (a deleted file kept open, by an fd in flight or anything else, shows no name but fills /tmp).
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

/** Whether the sandbox of the launcher `pid` has /tmp and HOME as bwrap made them: modes, and /tmp's space all free. */
export const pristine = (pid: number): boolean => {
  const root = `/proc/${pid}/root`
  try {
    const tmp = fs.lstatSync(`${root}/tmp`)
    const home = fs.lstatSync(`${root}${SANDBOX_HOME}`)
    const space = fs.statfsSync(`${root}/tmp`)
    return tmp.isDirectory() && (tmp.mode & 0o7777) === TMP_MODE && home.isDirectory() && (home.mode & 0o7777) === HOME_MODE &&
      space.bfree === space.blocks
  } catch {
    return false
  }
}
