import { describe, expect, it } from "vitest"
import { longFunctions } from "../lib/functionSize.js"

const body = (n: number) => Array.from({ length: n }, (_, i) => `  const x${i} = ${i}`).join("\n")

describe("longFunctions", () => {
  it("measures functions, arrows, methods and generator callbacks from their first line to their last", () => {
    const text = [
      `export function declared() {\n${body(3)}\n}`, // 5 lines
      `export const arrow = () => {\n${body(4)}\n}`, // 6 lines
      `class K {\n  method() {\n${body(5)}\n  }\n}`, // method: 7 lines
      `export const viaCall = Effect.gen(function*() {\n${body(6)}\n})` // 8 lines
    ].join("\n")
    expect(longFunctions("a.ts", text, 4).map((f) => [f.name, f.lines])).toEqual([
      ["declared", 5],
      ["arrow", 6],
      ["method", 7],
      ["Effect.gen(...)", 8]
    ])
    expect(longFunctions("a.ts", text, 6).map((f) => f.name)).toEqual(["method", "Effect.gen(...)"])
  })

  it("names a function by the variable or property it is assigned to, and lists only the outermost of nested long ones", () => {
    const text = `export const service = {\n  make: () => {\n    const inner = () => {\n${body(8)}\n    }\n${body(2)}\n  }\n}`
    const found = longFunctions("a.ts", text, 5)
    expect(found).toEqual([{ line: 2, name: "make", lines: found[0]!.lines }])
    expect(found[0]!.lines).toBe(14)
  })

  it("ignores overload signatures and declarations without a body, and comments and strings", () => {
    const text = [
      `export function f(a: string): string`,
      `export function f(a: number): number`,
      `export function f(a: unknown) { return a }`,
      `declare function g(): void`,
      `// function h() {\n${body(20)}\n// }`,
      `const s = "function long() {${"\\n".repeat(30)}}"`
    ].join("\n")
    expect(longFunctions("a.ts", text, 3)).toEqual([])
  })
})
