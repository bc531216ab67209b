-- Recall rounds per request (issue 18): upstream calls terse made after the first to answer
-- the model's terse_recall calls. Rows recorded before this migration had none.
ALTER TABLE "usage_events" ADD COLUMN "recall_rounds" INTEGER NOT NULL DEFAULT 0;
