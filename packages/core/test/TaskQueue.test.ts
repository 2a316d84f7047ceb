import { TaskQueue } from "@artana/core"
import { TaskQueueSuite } from "@artana/core/testing/suites"

TaskQueueSuite.suite("memory", () => TaskQueue.layerMemory)
