export { type AnnouncerOptions, KeyChangeAnnouncer } from "./announcer.ts";
export { type DroppedKeys, KeyLease, type KeyLeaseOptions } from "./lease.ts";
export { LEASE_SCRIPT_SOURCES } from "./scripts.ts";
