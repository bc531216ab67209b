-- The prompt-cache split of each request before compression (issue 17), estimated by the
-- data plane per request (docs/savings.md). Rows recorded before this migration get the
-- estimate terse made for them until now: the compressed request's own share of cache
-- reads and writes, grown with the request.
ALTER TABLE "usage_events" ADD COLUMN "cache_read_tokens_before_compression" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN "cache_write_tokens_before_compression" INTEGER NOT NULL DEFAULT 0;

UPDATE "usage_events"
SET "cache_read_tokens_before_compression" = LEAST("input_tokens_before_compression",
      round("cache_read_tokens"::float8 * "input_tokens_before_compression" / "input_tokens")),
    "cache_write_tokens_before_compression" = GREATEST(0, LEAST(
      "input_tokens_before_compression"
        - round("cache_read_tokens"::float8 * "input_tokens_before_compression" / "input_tokens"),
      round("cache_write_tokens"::float8 * "input_tokens_before_compression" / "input_tokens")))
WHERE "input_tokens" > 0 AND ("cache_read_tokens" > 0 OR "cache_write_tokens" > 0);
