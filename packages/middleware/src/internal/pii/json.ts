/**
 * Rewriting the strings inside a JSON text (tool-call arguments, tool results) without breaking it: a value
 * is detected in the decoded string, and the replacement is re-encoded, so escapes stay valid.
 *
 * @internal
 */

// In a valid JSON text every `"` outside a string opens one, so this finds exactly the string literals.
const STRING_LITERAL = /"(?:[^"\\]|\\.)*"/g

/**
 * `text` with each string literal passed (decoded) through `onString` and each stretch between literals
 * (numbers, `true`, punctuation) through `onOther`; undefined when `text` is not a JSON object or array.
 */
export const mapJson = (
  text: string,
  onString: (value: string) => string,
  onOther: (segment: string) => string
): string | undefined => {
  const first = text.trimStart()[0]
  if (first !== "{" && first !== "[") return undefined
  try {
    JSON.parse(text)
  } catch {
    return undefined
  }
  let out = ""
  let last = 0
  for (const m of text.matchAll(STRING_LITERAL)) {
    out += onOther(text.slice(last, m.index))
    const literal = m[0]
    const value: unknown = JSON.parse(literal)
    if (typeof value === "string") {
      const next = onString(value)
      out += next === value ? literal : JSON.stringify(next)
    } else {
      out += literal
    }
    last = m.index + literal.length
  }
  return out + onOther(text.slice(last))
}
