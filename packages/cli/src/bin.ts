#!/usr/bin/env node
/**
 * The `artana` executable. `--help` and `--version` are answered from a module that loads nothing heavy; any other
 * command line loads the command (@effect/cli, and then only the modules its command needs).
 *
 * @since 0.1.0
 */
import * as Help from "./internal/help.js"
import * as T from "./internal/terminal.js"

const args = process.argv.slice(2)
const quick = args.length === 1 && args[0] === "--version"
  ? `${Help.version()}\n`
  : Help.requested(args, T.style(T.colorsFor(process.stdout, process.env)), Help.version())

if (quick !== undefined) process.stdout.write(quick)
else (await import("./internal/main.js")).run(process.argv)
