export {
  callProxy,
  type Load,
  PROVIDER_KEY,
  type ProxyCall,
  percentile,
  type Sample,
  startLoad,
  statusCounts,
} from "./load.ts";
export { memoryAfterFullGc } from "./heap.ts";
export { counterTotal, type ProcessFigures, processFigures } from "./process-metrics.ts";
export { report } from "./report.ts";
export { type Rig, type RigOptions, startRig } from "./rig.ts";
export {
  type Account,
  type CreatedKey,
  PASSWORD,
  type Recorded,
  type ServiceName,
  type System,
  startSystem,
} from "./system.ts";
