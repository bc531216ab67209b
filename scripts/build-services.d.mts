// Types of scripts/build-services.mjs for the TypeScript that builds the trees.
export const ROOT: string;
export const DEFAULT_OUT: string;
export const SERVICES: Record<string, { entries: Record<string, string>; assets: string[]; natives: string[] }>;
/** Builds DIR/<service> for every service and records the inputs it read; resolves to DIR. */
export function buildServices(out?: string): Promise<string>;
/** The inputs whose content differs from what the last build in `out` read ([] when none). */
export function changedInputs(out?: string): string[];
/** Builds the trees unless the last build in `out` read exactly the files there are now. */
export function buildServicesIfChanged(out?: string): Promise<{ out: string; built: boolean; changed: string[] }>;
