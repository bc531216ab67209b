export * from "./deploy-files.ts";
