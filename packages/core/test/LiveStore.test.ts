// The live-delta retention contract on the in-memory stores (SQLite and PostgreSQL run it in their packages).
import { Layer } from "effect"
import { EventStore, LiveStore } from "@artana/core"
import { LiveStoreSuite } from "@artana/core/testing/suites"

LiveStoreSuite.suite("memory", () => Layer.mergeAll(EventStore.layerMemory, LiveStore.layerMemory))
