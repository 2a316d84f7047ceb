/**
 * One execution of a run: the code walks the loaded log; recorded steps return their logged results, new
 * steps run live and are appended. This module only composes the parts: the replay cursor, the ledger
 * (hash-chained, fenced append), ownership, the model and tool steps, the chat loop and the workflow's own steps.
 */
import type { WorkflowContext } from "../Workflow.js"
import * as Calls from "./calls.js"
import * as Ledger from "./ledger.js"
import * as ModelStep from "./modelStep.js"
import * as Ownership from "./ownership.js"
import * as ReplayCursor from "./replayCursor.js"
import * as StepEnv from "./stepEnv.js"
import * as ToolStep from "./toolStep.js"
import * as WorkflowSteps from "./workflowSteps.js"

export type { Deps, ExecutionOptions, Fault, Halt } from "./stepEnv.js"

export const make = (deps: StepEnv.Deps, options: StepEnv.ExecutionOptions) => {
  const { runId, tenant, mode } = options
  const cursor = ReplayCursor.make(runId, options.log, mode)
  const ownership = Ownership.make(runId, options.ownerEpoch, options.lease)
  const ledger = Ledger.make({
    store: deps.store,
    auditKey: deps.auditKey,
    runId,
    tenantId: tenant.tenantId,
    log: options.log,
    mode,
    ownerEpoch: options.ownerEpoch,
    claim: options.claim === true,
    onRefused: ownership.lose
  })
  const env = StepEnv.make(deps, options, cursor, ledger, ownership)
  const calls = Calls.make(env, ModelStep.make(env), ToolStep.make(env))
  const steps = WorkflowSteps.make(env, options.response)

  const context: WorkflowContext = { runId, tenant, ...calls, ...steps }

  return {
    context,
    /** Appends after the current head; fails with the store's error (used for a run's final events). */
    appendOrFail: ledger.append,
    halted: env.halted,
    head: ledger.head,
    spentUsd: env.spentUsd,
    /** Steps the log holds that the code did not ask for. */
    unconsumed: cursor.unconsumed,
    describeKey: cursor.describeKey
  }
}

export type Execution = ReturnType<typeof make>
