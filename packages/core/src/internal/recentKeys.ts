/**
 * The keys of the last `RECENT_KEYS` steps an execution consumed or wrote, to catch a reused key (see the README's
 * "Long runs"): two steps under one key this close together are refused; farther apart, the log holds two steps
 * under one key, which a replay meets in order. Memory is bounded by the window, however long the run.
 */

/** How many of the last steps' keys are remembered. */
export const RECENT_KEYS = 10_000

/**
 * The window of keys: auto keys (`kind:index`, handed out by `generated`) are kept by index with no string, any other
 * key by its string (`ExplicitKeys`).
 */
export const make = () => {
  const explicitKeys = ExplicitKeys()
  const autoKeys = AutoKeys()
  let remembered = 0
  return {
    /** The key was consumed or written: it is in the window for the next `RECENT_KEYS` keys remembered. */
    remember: (key: string): void => {
      remembered++
      if (!autoKeys.remember(key, remembered)) explicitKeys.remember(key, remembered)
    },
    /** Whether the key is in the window. */
    used: (key: string): boolean => autoKeys.used(key, remembered) || explicitKeys.used(key, remembered),
    /** `nextKey` handed out the auto key `kind:index` (`key`). */
    generated: (kind: string, index: number, key: string): void => autoKeys.generated(kind, index, key)
  }
}

export type RecentKeys = ReturnType<typeof make>

/**
 * The window of `RECENT_KEYS` keys consumed or written: a key remembered as the `n`th is in it while fewer than
 * `RECENT_KEYS` were remembered after it (`remembered`: how many so far).
 */
const inWindow = (n: number, remembered: number): boolean => n > 0 && remembered - n < RECENT_KEYS

/** The explicit keys of the window (any key that is not an auto key of it): the strings, with when each was last used. */
const ExplicitKeys = () => {
  const last = new Map<string, number>()
  let queue: Array<string> = []
  let at: Array<number> = []
  let head = 0
  return {
    remember: (key: string, n: number) => {
      // Keys that left the window are forgotten (unless used again since).
      while (head < queue.length && !inWindow(at[head]!, n)) {
        const old = queue[head]!
        if (last.get(old) === at[head]) last.delete(old)
        head++
      }
      if (head > 1024 && head * 2 > queue.length) {
        queue = queue.slice(head)
        at = at.slice(head)
        head = 0
      }
      last.set(key, n)
      queue.push(key)
      at.push(n)
    },
    used: (key: string, remembered: number): boolean => last.size > 0 && inWindow(last.get(key) ?? 0, remembered)
  }
}

/**
 * The auto keys (`kind:index`) of the last RECENT_KEYS indexes `nextKey` handed out, and when each was consumed or
 * written, by index: no key string is kept. Kept as strings, every key of a long run outlived two young collections
 * (a key stays in the window for 10,000 steps) and was promoted: a resume of 100,000 steps grew its old generation by
 * about 6 MB of keys that were garbage by then. Slot `index % RECENT_KEYS` holds the kind, the index, and when it was
 * remembered; a key is taken as that auto key only when it reads `kind:index` exactly (an explicit key that reads the
 * same is the same key, as before).
 */
const AutoKeys = () => {
  const kinds: Array<string> = []
  const indexes: Array<number> = []
  const rememberedAt: Array<number> = []
  // The last key handed out and its slot (valid until the next key is handed out): the step that asked for it looks it
  // up and remembers it next, and comparing the string is cheaper than reading its index again. One key is kept.
  let lastKey = ""
  let lastSlot = -1
  /** The slot of `key` when it is an auto key handed out within the window, else -1. */
  const slotOf = (key: string): number => {
    if (key === lastKey) return lastSlot
    const colon = key.lastIndexOf(":")
    const digits = key.length - colon - 1
    if (colon <= 0 || digits < 1 || digits > 15 || (digits > 1 && key.charCodeAt(colon + 1) === 48)) return -1
    let index = 0
    for (let i = colon + 1; i < key.length; i++) {
      const c = key.charCodeAt(i) - 48
      if (c < 0 || c > 9) return -1
      index = index * 10 + c
    }
    const slot = index % RECENT_KEYS
    if (indexes[slot] !== index) return -1
    const kind = kinds[slot]!
    return kind.length === colon && key.startsWith(kind) ? slot : -1
  }
  return {
    /** `nextKey` handed out `kind:index` (`key`). */
    generated: (kind: string, index: number, key: string) => {
      const slot = index % RECENT_KEYS
      kinds[slot] = kind
      indexes[slot] = index
      rememberedAt[slot] = 0
      lastKey = key
      lastSlot = slot
    },
    /** Remembers `key` as the `n`th when it is an auto key of the window; false when it is not one. */
    remember: (key: string, n: number): boolean => {
      const slot = slotOf(key)
      if (slot < 0) return false
      rememberedAt[slot] = n
      return true
    },
    used: (key: string, remembered: number): boolean => {
      const slot = slotOf(key)
      return slot >= 0 && inWindow(rememberedAt[slot]!, remembered)
    }
  }
}
