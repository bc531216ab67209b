export {
  generateRawKey,
  hashKey,
  isWellFormedKey,
  keyPrefixOf,
  KEY_PREFIX,
  KEY_PREFIX_LENGTH,
  RAW_KEY_LENGTH,
} from "./format.ts";
export { couldBeRecordId, newId } from "./ids.ts";
export * from "./cache-layout.ts";
export * from "./settings.ts";
