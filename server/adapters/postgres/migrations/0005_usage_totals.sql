-- Usage rows summed per organization and day (UTC), so that the ledger read of an organization's
-- balance (adapters/postgres/ledger-repository.ts) sums days instead of every row it ever made.
-- Kept by statement triggers in the transaction that changes the rows, so that sums and rows
-- agree in every snapshot, whoever writes (a gateway's batch by COPY or INSERT, an operator by
-- hand); rows a replayed batch skips are not in the transition table. Each transaction adds to
-- one of 16 shards of a day, so concurrent batches of one organization rarely wait for each
-- other's row lock; groups are written in key order, so they never wait in a cycle.
CREATE TABLE "usage_totals" (
	"org_id" text NOT NULL,
	"day" date NOT NULL,
	"shard" smallint NOT NULL,
	"cost_micros" bigint NOT NULL,
	"requests" bigint NOT NULL,
	CONSTRAINT "usage_totals_org_id_day_shard_pk" PRIMARY KEY("org_id","day","shard")
);
--> statement-breakpoint
CREATE FUNCTION nilegate_add_usage_totals() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writer_shard smallint := (pg_current_xact_id()::text::bigint % 16)::smallint;
BEGIN
  IF TG_OP = 'DELETE' OR TG_OP = 'UPDATE' THEN
    INSERT INTO usage_totals AS totals (org_id, day, shard, cost_micros, requests)
    SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, writer_shard, -SUM(cost_micros), -COUNT(*)
    FROM old_rows GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (org_id, day, shard) DO UPDATE
      SET cost_micros = totals.cost_micros + EXCLUDED.cost_micros, requests = totals.requests + EXCLUDED.requests;
  END IF;
  IF TG_OP = 'INSERT' OR TG_OP = 'UPDATE' THEN
    INSERT INTO usage_totals AS totals (org_id, day, shard, cost_micros, requests)
    SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, writer_shard, SUM(cost_micros), COUNT(*)
    FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (org_id, day, shard) DO UPDATE
      SET cost_micros = totals.cost_micros + EXCLUDED.cost_micros, requests = totals.requests + EXCLUDED.requests;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER usage_events_add_inserted AFTER INSERT ON usage_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nilegate_add_usage_totals();
--> statement-breakpoint
CREATE TRIGGER usage_events_remove_deleted AFTER DELETE ON usage_events REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION nilegate_add_usage_totals();
--> statement-breakpoint
CREATE TRIGGER usage_events_move_updated AFTER UPDATE ON usage_events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nilegate_add_usage_totals();
--> statement-breakpoint
-- The rows written before. Creating the triggers locked the table against writes until this
-- migration commits, so no row is summed twice or missed.
INSERT INTO usage_totals (org_id, day, shard, cost_micros, requests)
SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, 0, SUM(cost_micros), COUNT(*)
FROM usage_events GROUP BY 1, 2;
