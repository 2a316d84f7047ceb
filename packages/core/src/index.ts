/**
 * @artana/core: schemas, ports, the durable kernel and workflows.
 *
 * @since 0.1.0
 */
export * as Artana from "./Artana.js"
export * as Chat from "./Chat.js"
export * as ChatLoop from "./ChatLoop.js"
export * as Errors from "./Errors.js"
export * as Event from "./Event.js"
export * as EventStore from "./EventStore.js"
export * as Json from "./Json.js"
export * as Kernel from "./Kernel.js"
export * as Lease from "./Lease.js"
export * as Live from "./Live.js"
export * as LiveStore from "./LiveStore.js"
export * as Middleware from "./Middleware.js"
export * as ModelPort from "./ModelPort.js"
export * as Pricing from "./Pricing.js"
export * as SqlErrors from "./SqlErrors.js"
export * as SqlEventStore from "./SqlEventStore.js"
export * as SqlMigrations from "./SqlMigrations.js"
export * as SqlTaskQueue from "./SqlTaskQueue.js"
export * as TaskQueue from "./TaskQueue.js"
export * as Tenant from "./Tenant.js"
export * as Tool from "./Tool.js"
export * as ToolRegistry from "./ToolRegistry.js"
export * as Verify from "./Verify.js"
export * as Workflow from "./Workflow.js"
