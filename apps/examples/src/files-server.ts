// A small filesystem MCP server, written with the official SDK (`@modelcontextprotocol/sdk`), after the reference
// filesystem server's pattern: it serves one folder, read-only, over stdio. Artana starts it as a child process
// (`node --import tsx src/files-server.ts <folder>`) and ends it with the run's layer.
//   list_files {}            the files under the folder, relative paths
//   read_file { path }       a file's text; a path outside the folder is refused as a tool error
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import * as fs from "node:fs"
import * as path from "node:path"

const root = fs.realpathSync(process.argv[2] ?? process.cwd())

const tools: Array<Tool> = [
  {
    name: "list_files",
    description: "Lists the files of the shared folder, as paths relative to it.",
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true }
  },
  {
    name: "read_file",
    description: "Reads a text file of the shared folder.",
    inputSchema: { type: "object", properties: { path: { type: "string", minLength: 1, description: "relative to the shared folder" } }, required: ["path"] },
    annotations: { readOnlyHint: true }
  }
]

const refused = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true })

/** The file `relative` names inside the folder, or undefined when it would leave it (`..`, an absolute path, a link out). */
const inside = (relative: string): string | undefined => {
  const resolved = path.resolve(root, relative)
  if (!fs.existsSync(resolved)) return resolved.startsWith(root + path.sep) ? resolved : undefined
  const real = fs.realpathSync(resolved)
  return real.startsWith(root + path.sep) ? real : undefined
}

const list = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? list(full) : entry.isFile() ? [path.relative(root, full)] : []
  }).sort()

const server = new Server({ name: "files", version: "1.0.0" }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, () => Promise.resolve({ tools }))
server.setRequestHandler(CallToolRequestSchema, (request): Promise<CallToolResult> => {
  const { name, arguments: args } = request.params
  if (name === "list_files") return Promise.resolve({ content: [{ type: "text", text: list(root).join("\n") }] })
  if (name !== "read_file") return Promise.resolve(refused(`no tool named ${name}`))
  const file = inside(String(args?.["path"] ?? ""))
  if (file === undefined) return Promise.resolve(refused(`${String(args?.["path"])} is outside the shared folder`))
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) return Promise.resolve(refused(`no file ${String(args?.["path"])}`))
  return Promise.resolve({ content: [{ type: "text", text: fs.readFileSync(file, "utf8") }] })
})

await server.connect(new StdioServerTransport())
