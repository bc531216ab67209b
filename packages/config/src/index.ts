export { ConfigError, loadConfig, loadConfigOrExit } from "./load.ts";
export * as fields from "./fields.ts";
export { DEFAULT_PLANS, PLAN_NAMES, plansFromEnv, type PlanLimits, type PlanName, type Plans } from "./plans.ts";
export {
  controlPlaneAdminEnv,
  controlPlaneEnv,
  type ControlPlaneAdminConfig,
  dataPlaneEnv,
  meteringWorkerEnv,
  type ControlPlaneConfig,
  type DataPlaneConfig,
  type MeteringWorkerConfig,
} from "./services.ts";
