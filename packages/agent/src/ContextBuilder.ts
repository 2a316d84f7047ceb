/**
 * What an agent sends before every model step. The `ContextBuilder` assembles it: a system prompt made of the
 * sections placed at the top (long-term memory), the agent's identity (its instructions), the other sections
 * (experience rules, a user's own RAG, anything implementing `ContextSection`) and the skills list; then the task,
 * the `Past Events Summary` compaction left, and the recent history.
 *
 * Compose it (`new ContextBuilder().withSections(mySection)`, or the agent's `sections` option) or subclass it
 * and override `systemPrompt`, `formatSkills` or `messages` to change the layout.
 *
 * A section renders inside the agent's workflow, before every model step, so a replay must render the same text:
 * anything not derived from the input goes through the kernel (`ctx.step`). `ContextBuilder.memoized` does that
 * for a section that loads its text from somewhere (a store, an index).
 *
 * @since 0.1.0
 */
import type { Chat, Errors, Workflow } from "@artana/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ExtensionError } from "./AgentErrors.js"

type ChatMessage = Chat.ChatMessage

/** Where a section goes in the system prompt: before the identity, or after it (the default). */
export type Placement = "top" | "body"

/** What a section knows when it renders, before a model step. */
export interface SectionInput {
  /** The run's durable context: read anything that can change through it (`ctx.step`), so replays match. */
  readonly ctx: Workflow.WorkflowContext
  /** The agent's name. */
  readonly agent: string
  /** The task the run was given (its prompt). */
  readonly task: string
  /** The model step about to be taken, from 0. */
  readonly turn: number
  /** The history as the agent holds it now (after compaction), without the task. */
  readonly history: ReadonlyArray<ChatMessage>
  /** What this section rendered for the previous model step of this run; undefined at the first. */
  readonly previous: string | undefined
  /** A step key of this section for this turn: `turn:<n>/section:<name>`, `/<suffix>` appended when given. */
  readonly key: (suffix?: string) => string
}

/** Errors a section may fail with; the run fails with them. */
export type SectionError = Errors.StoreError | ExtensionError

/**
 * A part of the system prompt, rendered before every model step. Anyone implements it: the agent's memory section
 * does, `@artana/experience` plugs its learned rules in with one, and so does a user's own retrieval.
 */
export interface ContextSection {
  /** Names the section (in step keys and logs); unique within an agent. */
  readonly name: string
  readonly placement?: Placement | undefined
  /**
   * The section's text (it carries its own heading, `[CORE MEMORY]`), or undefined/"" for none this turn.
   * Deterministic given the input, or read through `input.ctx`.
   */
  readonly render: (input: SectionInput) => Effect.Effect<string | undefined, SectionError>
}

/** A section with fixed text. */
export const text = (name: string, content: string, placement?: Placement): ContextSection => ({
  name,
  placement,
  render: () => Effect.succeed(content)
})

/** Options of `memoized`. */
export interface MemoizedOptions<E extends SectionError> {
  readonly name: string
  readonly placement?: Placement | undefined
  /**
   * `"every-turn"` (default): loaded before every model step; the step logs the text only when it changed since
   * the previous turn (else `null`), so a long run's log stays small. `"once"`: loaded before the first step of the
   * run and kept.
   */
  readonly refresh?: "every-turn" | "once" | undefined
  /** Loads the text (undefined or "" for none). Runs live once per turn (or run); a replay reads the log instead. */
  readonly load: (input: SectionInput) => Effect.Effect<string | undefined, E>
}

const Logged = Schema.NullOr(Schema.String)

/**
 * A section whose text is loaded from outside the run (a store, an index), through a memoized kernel step keyed
 * `turn:<n>/section:<name>` (or `section:<name>` for `"once"`): a resumed or replayed run renders what the
 * original run rendered.
 *
 * @example
 * const docs = ContextBuilder.memoized({
 *   name: "docs",
 *   load: ({ task }) => Effect.map(searchIndex(task), (hits) => `[RELEVANT DOCS]\n${hits.join("\n")}`)
 * })
 */
export const memoized = <E extends SectionError>(options: MemoizedOptions<E>): ContextSection => ({
  name: options.name,
  placement: options.placement,
  render: (input) => {
    if (options.refresh === "once") {
      if (input.turn > 0) return Effect.succeed(input.previous)
      return input.ctx.step(`section:${options.name}`, Effect.map(options.load(input), (t) => t ?? ""), Schema.String, {
        key: `section:${options.name}`
      })
    }
    const previous = input.previous ?? ""
    const changed = Effect.map(options.load(input), (t) => ((t ?? "") === previous && input.turn > 0 ? null : t ?? ""))
    return Effect.map(
      input.ctx.step(`section:${options.name}`, changed, Logged, { key: input.key() }),
      (logged) => logged ?? previous
    )
  }
})

/** A section as rendered for one model step. */
export interface RenderedSection {
  readonly name: string
  readonly placement: Placement
  readonly text: string
}

/** A skill as the progressive list shows it: name and one line. */
export interface SkillSummary {
  readonly name: string
  readonly summary: string
  readonly loaded: boolean
  /** A loaded skill's instructions and examples (`Skills.guideOf`), shown while it is loaded. */
  readonly guide?: string | undefined
}

/** Everything the prompt of one model step is made of. */
export interface PromptParts {
  /** The agent's instructions. */
  readonly identity: string
  readonly sections: ReadonlyArray<RenderedSection>
  /** The skills list (progressive skills), or undefined when every tool is offered with its full schema. */
  readonly skills: ReadonlyArray<SkillSummary> | undefined
  readonly task: string
  /** The `Past Events Summary` of what compaction folded away, if it did. */
  readonly summary: string | undefined
  readonly history: ReadonlyArray<ChatMessage>
}

/** The heading of the summary message compaction leaves. */
export const SUMMARY_HEADING = "Past Events Summary"

/** The heading of the skills list. */
export const SKILLS_HEADING = "[SKILLS]"

/** Assembles the prompt of every model step. Compose it with `withSections`, or subclass it. */
export class ContextBuilder {
  readonly sections: ReadonlyArray<ContextSection>

  constructor(options: { readonly sections?: ReadonlyArray<ContextSection> | undefined } = {}) {
    this.sections = options.sections ?? []
    const names = new Set<string>()
    for (const s of this.sections) {
      if (names.has(s.name)) throw new Error(`two context sections are named "${s.name}"; section names must be unique`)
      names.add(s.name)
    }
  }

  /** This builder (of the same class) with more sections, after its own. */
  withSections(...sections: ReadonlyArray<ContextSection>): this {
    const next: this = Object.create(Object.getPrototypeOf(this))
    Object.assign(next, this)
    const all = [...this.sections, ...sections]
    // Re-run the constructor's check on the combined list.
    new ContextBuilder({ sections: all })
    Object.defineProperty(next, "sections", { value: all, enumerable: true })
    return next
  }

  /**
   * The skills list: how to load, the loaded skills by name (their tools are in the tool list, described in full)
   * with the instructions and examples of those that have them, then one line per skill not loaded.
   */
  formatSkills(skills: ReadonlyArray<SkillSummary>): string {
    const loaded = skills.filter((s) => s.loaded)
    return [
      SKILLS_HEADING,
      "Call load_skill with a skill's name to get its parameters, instructions and examples; its tool is callable from your next turn on.",
      `Loaded (in your tool list): ${loaded.length === 0 ? "(none yet)" : loaded.map((s) => s.name).join(", ")}`,
      ...loaded.flatMap((s) => (s.guide === undefined ? [] : [s.guide])),
      ...skills.filter((s) => !s.loaded).map((s) => `- ${s.name}: ${s.summary}`)
    ].join("\n")
  }

  /** The system prompt: top sections, identity, body sections, skills; blank lines between the parts. */
  systemPrompt(parts: PromptParts): string {
    const texts = (placement: Placement) => parts.sections.filter((s) => s.placement === placement && s.text !== "").map((s) => s.text)
    return [
      ...texts("top"),
      parts.identity,
      ...texts("body"),
      ...(parts.skills === undefined || parts.skills.length === 0 ? [] : [this.formatSkills(parts.skills)])
    ].filter((t) => t.trim() !== "").join("\n\n")
  }

  /** The summary message compaction leaves in place of what it folded away. */
  summaryMessage(summary: string): ChatMessage {
    return { role: "system", content: `${SUMMARY_HEADING}:\n${summary}` }
  }

  /** The messages of the next model step: the system prompt, the task, the summary, the history. */
  messages(parts: PromptParts): ReadonlyArray<ChatMessage> {
    return [
      { role: "system", content: this.systemPrompt(parts) },
      { role: "user", content: parts.task },
      ...(parts.summary === undefined ? [] : [this.summaryMessage(parts.summary)]),
      ...parts.history
    ]
  }

  /**
   * Renders every section for a model step, in order. `previous` holds what each rendered last turn (by name); the
   * result is what they render now.
   */
  renderSections(
    input: Omit<SectionInput, "previous" | "key">,
    previous: ReadonlyMap<string, string>
  ): Effect.Effect<ReadonlyArray<RenderedSection>, SectionError> {
    return Effect.forEach(this.sections, (section) =>
      Effect.map(
        section.render({
          ...input,
          previous: previous.get(section.name),
          key: (suffix) => `turn:${input.turn}/section:${section.name}${suffix === undefined ? "" : `/${suffix}`}`
        }),
        (text): RenderedSection => ({ name: section.name, placement: section.placement ?? "body", text: text ?? "" })
      ))
  }
}
