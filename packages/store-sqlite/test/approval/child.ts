// A child process of the approval tests (../approvals.test.ts). Prints one JSON line: its result, or the error's tag.
//   start DB LOG RUN            runs the payout until it pauses for approval
//   approve DB LOG ID WHO [ARGS] [BARRIER]   approves (with edited arguments); with BARRIER (a directory), once started it
//                                            writes BARRIER/approve.ready and decides once BARRIER/go exists
//   reject DB LOG ID WHO REASON [BARRIER]    the same, BARRIER/reject.ready
import * as fs from "node:fs"
import * as path from "node:path"
import { Predicate } from "effect"
import { ScriptedModel } from "@artana/core/testing"
import { client, payout, tenant } from "./payout.js"

const [mode = "", db = "", log = "", ...rest] = process.argv.slice(2)

const main = async () => {
  if (mode === "start") {
    const artana = client(db, log, [ScriptedModel.toolCall("transfer_funds", { to: "acc-9", amount: 500 })])
    const result = await artana.run(payout(log), { runId: rest[0] ?? "", tenant, input: { prompt: "Pay acc-9 500" } })
    await artana.close()
    return result
  }
  const [approvalId = "", approver = "", detail = "", barrier] = rest
  const artana = client(db, log, [ScriptedModel.text("Done")])
  if (barrier !== undefined) {
    fs.writeFileSync(path.join(barrier, `${mode}.ready`), "")
    while (!fs.existsSync(path.join(barrier, "go"))) await new Promise((resolve) => setTimeout(resolve, 5))
  }
  try {
    const result = mode === "approve"
      ? await artana.approve({ tenantId: "acme", approvalId, approver, ...(detail === "" ? {} : { arguments: JSON.parse(detail) }) })
      : await artana.reject({ tenantId: "acme", approvalId, approver, reason: detail })
    return result
  } finally {
    await artana.close()
  }
}

main().then(
  (result) => console.log(JSON.stringify({ ok: true, result })),
  (error: unknown) => {
    const tag = Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" ? error._tag : "Error"
    console.log(JSON.stringify({ ok: false, tag, message: error instanceof Error ? error.message : String(error) }))
  }
)
