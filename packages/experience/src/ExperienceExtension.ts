/**
 * Experience for `@artana/agent`'s `AutonomousAgent`, plugged in through the agent's public `Extension` interface
 * (the agent does not know this package): a context section that renders `[PAST LEARNINGS FOR THIS TASK]` from the
 * tenant's rules for the task, and, with `autoReflect`, a hook that runs after the final answer (or the loop's
 * failure): a reflection model step of its own (`turn_<N>_reflection`), the rules it extracted saved with the
 * run's tenant and category, and the rules that were in the prompt reinforced, positively for a successful run,
 * negatively for a failed one. Every step goes through the kernel, so a replay is exact and a crash between the
 * answer and the saved rules neither loses nor duplicates them.
 *
 * @since 0.1.0
 */
import type { ContextBuilder, Extension } from "@artana/agent"
import type { Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Experience from "./Experience.js"
import type { ExperienceRule } from "./ExperienceRule.js"
import { ExperienceStore, type Service as StoreService } from "./ExperienceStore.js"

export interface Options {
  /** The kind of task (`"flight-booking"`): rules are kept and looked up per tenant and category. */
  readonly taskCategory: string | ((input: { readonly agent: string; readonly task: string }) => string)
  /** Rules in the prompt, those that helped most first. Default 10. */
  readonly limit?: number | undefined
  /** Reflect at the end of each run and save what it learned; reinforce the rules it had. Default false. */
  readonly autoReflect?: boolean | undefined
  /** The model of the reflection step (a cheap one does); the run's model when absent. */
  readonly reflectionModel?: string | undefined
  /** Rules kept from one reflection. Default 5. */
  readonly maxRulesPerRun?: number | undefined
  /** Extension and section name (step keys carry it). Default `"experience"`. */
  readonly name?: string | undefined
}

const categoryOf = (options: Options, input: { readonly agent: string; readonly task: string }) =>
  typeof options.taskCategory === "string" ? options.taskCategory : options.taskCategory(input)

/**
 * The extension, on the `ExperienceStore` in context.
 *
 * @example
 * const agent = Effect.map(Experience.extension({ taskCategory: "flight-booking", autoReflect: true }), (experience) =>
 *   AutonomousAgent.make({ name: "booker", instructions: "You book flights.", tools: [bookFlight], extensions: [experience] }))
 */
export const extension = (options: Options): Effect.Effect<Extension.Extension, never, ExperienceStore> =>
  Effect.map(ExperienceStore, (store) => make(store, options))

/** The extension on a given store. */
export const make = (store: StoreService, options: Options): Extension.Extension => {
  const name = options.name ?? "experience"
  // The rules each execution put in its prompt, for the finish hook to reinforce. Keyed by the execution's context:
  // a resumed or replayed execution renders its first turn again (from its log), so the entry is always there.
  const inPrompt = new WeakMap<Workflow.WorkflowContext, ReadonlyArray<ExperienceRule>>()

  const section: ContextBuilder.ContextSection = {
    name,
    render: (input) =>
      Effect.gen(function*() {
        // Read once per run, before the first model step, in a memoized step: every turn shows the same rules,
        // and a replay shows what the original run saw.
        let rules = inPrompt.get(input.ctx)
        if (rules === undefined) {
          rules = yield* Experience.fetchRules(store, input.ctx, {
            taskCategory: categoryOf(options, input),
            limit: options.limit,
            name: `${name}:fetch_rules`,
            key: `section:${name}`
          })
          inPrompt.set(input.ctx, rules)
        }
        return Experience.render(rules)
      })
  }

  const onFinish: Extension.Extension["onFinish"] = (input) =>
    Effect.gen(function*() {
      const taskCategory = categoryOf(options, input)
      const known = inPrompt.get(input.ctx) ?? []
      const success = input.outcome._tag === "success"
      const learned = yield* Experience.reflect(input.ctx, {
        taskCategory,
        messages: input.messages,
        outcome: success ? "success" : "failure",
        knownRules: known,
        model: options.reflectionModel ?? input.model,
        key: `turn_${input.turns}_reflection`,
        maxRules: options.maxRulesPerRun
      })
      if (learned.length > 0) {
        yield* Experience.saveRules(store, input.ctx, { taskCategory, rules: learned, name: `${name}:save_rules`, key: input.key("save_rules") })
      }
      if (known.length > 0) {
        yield* Experience.reinforce(store, input.ctx, {
          ruleIds: known.map((r) => r.ruleId),
          positive: success,
          name: `${name}:reinforce_rules`,
          key: input.key("reinforce_rules")
        })
      }
    }).pipe(
      // A rule the store refuses (too long, empty) is not worth failing the run for.
      Effect.catchTag("InvalidRule", () => Effect.void)
    )

  return {
    name,
    sections: [section],
    ...(options.autoReflect === true ? { onFinish } : {})
  }
}
