export * as fields from "./fields.ts";
export { boundHostPort, type HttpReceiveLimits, httpServerOptions, joinHostPort } from "./http-server.ts";
export { ConfigError, loadConfig, loadConfigOrExit } from "./load.ts";
export { DEFAULT_PLANS, PLAN_NAMES, type PlanLimits, type PlanName, type Plans, plansFromEnv } from "./plans.ts";
export { pricesFromEnv } from "./prices.ts";
export {
  type ControlPlaneAdminConfig,
  type ControlPlaneConfig,
  controlPlaneAdminEnv,
  controlPlaneEnv,
  type DataPlaneConfig,
  dataPlaneEnv,
  type MeteringWorkerConfig,
  meteringWorkerEnv,
} from "./services.ts";
