// The configuration keys a repository may hold for shell.run's git (and an agent may set with `git config KEY VALUE`):
// what `git init` and `git clone` write, identities, branches and remotes, display settings. Every other key can make
// git run a program or read another file, or is not known to be harmless; gitRepository.ts refuses a repository
// whose configuration holds one, git.ts refuses setting one.

/** Harmless configuration keys: `section`, whether it has a subsection (`remote.<name>.url`), and its names (`*` matches every name). */
const ALLOWED: ReadonlyArray<readonly [string, boolean, ReadonlyArray<string> | "*"]> = [
  ["core", false, [
    "repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase", "precomposeunicode", "symlinks",
    "autocrlf", "eol", "safecrlf", "quotepath", "abbrev", "compression", "loosecompression", "bigfilethreshold",
    "sparsecheckout", "sparsecheckoutcone", "splitindex", "untrackedcache", "commitgraph", "multipackindex",
    "checkstat", "trustctime", "preloadindex", "protecthfs", "protectntfs", "warnambiguousrefs", "whitespace"
  ]],
  ["extensions", false, ["objectformat", "worktreeconfig"]],
  ["user", false, ["name", "email", "useconfigonly"]],
  ["author", false, ["name", "email"]],
  ["committer", false, ["name", "email"]],
  ["init", false, ["defaultbranch"]],
  ["remote", true, ["url", "pushurl", "fetch", "push", "mirror", "tagopt", "prune", "prunetags", "skipdefaultupdate", "skipfetchall"]],
  ["branch", true, ["remote", "pushremote", "merge", "rebase", "description"]],
  ["submodule", true, ["url", "active", "branch"]],
  ["pull", false, ["rebase", "ff"]],
  ["merge", false, ["ff", "conflictstyle"]],
  ["push", false, ["default", "followtags"]],
  ["fetch", false, ["prune", "prunetags"]],
  ["rebase", false, ["autosquash", "autostash", "updaterefs"]],
  ["receive", false, ["denycurrentbranch"]],
  ["gc", false, ["auto", "autopacklimit"]],
  ["index", false, ["version"]],
  ["status", false, ["showuntrackedfiles", "short", "branch"]],
  ["log", false, ["date", "decorate", "follow", "abbrevcommit", "showroot"]],
  ["diff", false, ["renames", "algorithm", "noprefix", "mnemonicprefix", "context", "interhunkcontext", "colormoved", "indentheuristic"]],
  ["color", false, "*"],
  ["color", true, "*"],
  ["advice", false, "*"]
]

/** Whether a key as `git config --name-only` prints it (section and name in lower case) is on the allowlist. */
export const allowedKey = (key: string): boolean => {
  const first = key.indexOf(".")
  const last = key.lastIndexOf(".")
  if (first <= 0 || last === key.length - 1) return false
  const section = key.slice(0, first)
  const name = key.slice(last + 1)
  const hasSubsection = last > first
  return ALLOWED.some(([s, sub, names]) => s === section && sub === hasSubsection && (names === "*" || names.includes(name)))
}
