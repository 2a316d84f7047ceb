/**
 * Function size (CONVENTIONS.md: "a function that does one job"; issue #14: "no function over ~120 lines"): every
 * function, arrow function, method, accessor and constructor in a package's src (nested ones too), counted from its
 * first line to its last. A long function is split along its seams; nothing is exempt.
 */
import ts from "typescript"

export const MAX_FUNCTION_LINES = 120

export interface LongFunction {
  readonly line: number
  /** The declared name, or the variable / property it is assigned to ("(anonymous)" otherwise). */
  readonly name: string
  readonly lines: number
}

const isFunction = (n: ts.Node): n is ts.FunctionLikeDeclaration =>
  ts.isFunctionDeclaration(n) || ts.isFunctionExpression(n) || ts.isArrowFunction(n) || ts.isMethodDeclaration(n) ||
  ts.isGetAccessorDeclaration(n) || ts.isSetAccessorDeclaration(n) || ts.isConstructorDeclaration(n)

/** The name a function goes by: its own, or that of the declaration it is the value of. */
const nameOf = (n: ts.FunctionLikeDeclaration, sf: ts.SourceFile): string => {
  if (n.name !== undefined) return n.name.getText(sf)
  const parent = n.parent
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name !== undefined) {
    return parent.name.getText(sf)
  }
  if (ts.isCallExpression(parent)) return `${parent.expression.getText(sf).slice(0, 40)}(...)`
  return "(anonymous)"
}

/**
 * Every function of `text` longer than `max` lines (body included), in source order. A long function's inner
 * functions are not listed: splitting it is the first move (the check then sees what is left inside).
 */
export const longFunctions = (fileName: string, text: string, max: number = MAX_FUNCTION_LINES): ReadonlyArray<LongFunction> => {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const found: Array<LongFunction> = []
  const visit = (n: ts.Node): void => {
    // overload signatures and declared (body-less) functions have no body to measure
    if (isFunction(n) && n.body !== undefined) {
      const first = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line
      const last = sf.getLineAndCharacterOfPosition(n.getEnd()).line
      if (last - first + 1 > max) {
        found.push({ line: first + 1, name: nameOf(n, sf), lines: last - first + 1 })
        return
      }
    }
    ts.forEachChild(n, visit)
  }
  visit(sf)
  return found
}
