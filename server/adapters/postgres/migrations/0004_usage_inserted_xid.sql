-- The transaction that wrote each usage row, for rebuilds of admission counters to find the rows
-- their ledger snapshot did not hold (core/late-usage.ts). Added without a default first, so that
-- existing rows stay NULL instead of the whole table being rewritten under a lock; the default then
-- applies to new rows only.
ALTER TABLE "usage_events" ADD COLUMN "inserted_xid" "xid8";
--> statement-breakpoint
ALTER TABLE "usage_events" ALTER COLUMN "inserted_xid" SET DEFAULT pg_current_xact_id();
