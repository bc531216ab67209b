-- Prompt-cache parts of input_tokens, as the provider reported them (issue 17). Rows
-- recorded before this migration read as "no cache", which is what was known of them.
ALTER TABLE "usage_events" ADD COLUMN "cache_read_tokens" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN "cache_write_tokens" INTEGER NOT NULL DEFAULT 0;
