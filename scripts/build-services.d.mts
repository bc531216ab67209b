// Types of scripts/build-services.mjs for the TypeScript tests that build the trees.
export const ROOT: string;
export const DEFAULT_OUT: string;
export const SERVICES: Record<string, { entries: Record<string, string>; assets: string[]; natives: string[] }>;
/** Builds DIR/<service> for every service; resolves to DIR. */
export function buildServices(out?: string): Promise<string>;
