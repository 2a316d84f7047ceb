/**
 * Types what the kernel does by a workflow's name. A run resumed without its workflow (`Artana.resume({ tenantId,
 * runId })`, `Kernel.resume`, the Promise client's `resume`, `Artana.approve`) is continued by whichever registered
 * workflow its log names, so by default its output and error are `unknown`. Declare the workflows the application
 * registers, once, and those calls are typed by them (their outputs, their declared errors, and the kernel's):
 *
 * ```ts
 * declare module "@artana/core" {
 *   interface Register {
 *     readonly workflows: typeof refund | typeof onboarding
 *   }
 * }
 * ```
 *
 * The declaration is the application's promise, as Temporal's `getHandle<typeof workflow>(id)` is: the kernel
 * checks at run time only that the run's workflow is registered (`WorkflowNotFound`). Give `resume` the workflow for a
 * call typed and checked by that one workflow.
 *
 * @since 0.1.0
 */
import type * as Workflow from "./Workflow.js"

/** Augment it with `workflows`: the union of the workflows the application registers (see above). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declared empty so applications can augment it
export interface Register {}

/** The registered workflows' union, or `never` when the application declares none. */
export type Registered = Register extends { readonly workflows: infer W } ? W : never

type OutputOf<W> = W extends Workflow.Workflow<infer _I, infer O, infer _E> ? O : never
type ErrorOf<W> = W extends Workflow.Workflow<infer _I, infer _O, infer E> ? E : never

/** What a run resumed by name returns: the registered workflows' outputs, `unknown` when none is declared. */
export type ByNameOutput = [Registered] extends [never] ? unknown : OutputOf<Registered>

/**
 * What a run resumed by name may fail with, beside the kernel's own errors: the registered workflows' declared
 * errors, `unknown` when none is declared.
 */
export type ByNameError = [Registered] extends [never] ? unknown : ErrorOf<Registered>
