-- The ledger at scale (docs/ledger.md). usage_events becomes a table partitioned by month (UTC) of
-- created_at, whose rows are never updated or deleted; what balances, month spends and reports
-- need is summed with the rows, in the transaction that writes them, into usage_totals (per UTC
-- day, for balances) and three rollups per project, key, model and endpoint: UTC quarter-hours and
-- hours, and days of the organization's billing time zone. Old months then leave whole, by
-- dropping their partition, and nothing derived from them moves.
--
-- Spend checkpoints and usage epochs go: a month's spends are summed from the day rollups. So does
-- inserted_xid: the rows a snapshot did not hold are found by the system column xmin, which a
-- restore or a move to another cluster writes afresh (nilegate_row_xid), so that neither needs the
-- whole table rewritten.
DROP TRIGGER usage_events_count_inserted ON usage_events;
--> statement-breakpoint
DROP TRIGGER usage_events_count_deleted ON usage_events;
--> statement-breakpoint
DROP TRIGGER usage_events_count_updated ON usage_events;
--> statement-breakpoint
DROP FUNCTION nilegate_count_usage_changes();
--> statement-breakpoint
DROP TRIGGER usage_events_truncated ON usage_events;
--> statement-breakpoint
DROP FUNCTION nilegate_forget_usage_sums();
--> statement-breakpoint
DROP TRIGGER usage_events_add_inserted ON usage_events;
--> statement-breakpoint
DROP TRIGGER usage_events_remove_deleted ON usage_events;
--> statement-breakpoint
DROP TRIGGER usage_events_move_updated ON usage_events;
--> statement-breakpoint
DROP FUNCTION nilegate_add_usage_totals();
--> statement-breakpoint
DROP TABLE spend_checkpoints, usage_epochs;
--> statement-breakpoint
DROP INDEX usage_events_org_id_inserted_xid_index;
--> statement-breakpoint
ALTER TABLE usage_events DROP COLUMN inserted_xid;
--> statement-breakpoint
-- The table as it was becomes the partition of everything before the next month, below, when it
-- has rows; its key gains the organization and the partition column.
ALTER TABLE usage_events RENAME TO usage_events_legacy;
--> statement-breakpoint
ALTER TABLE usage_events_legacy DROP CONSTRAINT usage_events_pkey;
--> statement-breakpoint
ALTER INDEX usage_events_org_id_created_at_index RENAME TO usage_events_legacy_org_id_created_at_index;
--> statement-breakpoint
ALTER INDEX usage_events_unbilled_index RENAME TO usage_events_legacy_unbilled_index;
--> statement-breakpoint
CREATE TABLE "usage_events" (
	"request_id" text NOT NULL,
	"org_id" text NOT NULL,
	"project_id" text NOT NULL,
	"key_id" text NOT NULL,
	"model" text NOT NULL,
	"endpoint" text NOT NULL,
	"stream" boolean NOT NULL,
	"prompt_tokens" integer NOT NULL,
	"completion_tokens" integer NOT NULL,
	"cost_micros" bigint NOT NULL,
	"status" integer NOT NULL,
	"latency_ms" integer NOT NULL,
	"region" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"unbilled_prompt_tokens" integer DEFAULT 0 NOT NULL,
	"unbilled_completion_tokens" integer DEFAULT 0 NOT NULL,
	"unbilled_micros" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "usage_events_pkey" PRIMARY KEY("org_id","request_id","created_at")
) PARTITION BY RANGE ("created_at");
--> statement-breakpoint
CREATE INDEX "usage_events_org_id_created_at_index" ON "usage_events" USING btree ("org_id","created_at");
--> statement-breakpoint
CREATE INDEX "usage_events_unbilled_index" ON "usage_events" USING btree ("created_at","request_id") WHERE "usage_events"."unbilled_micros" > 0;
--> statement-breakpoint
CREATE TABLE "usage_rollup_quarters" (
	"org_id" text NOT NULL,
	"slot" timestamp with time zone NOT NULL,
	"project_id" text NOT NULL,
	"key_id" text NOT NULL,
	"model" text NOT NULL,
	"endpoint" text NOT NULL,
	"requests" bigint NOT NULL,
	"prompt_tokens" bigint NOT NULL,
	"completion_tokens" bigint NOT NULL,
	"cost_micros" bigint NOT NULL,
	CONSTRAINT "usage_rollup_quarters_pkey" PRIMARY KEY("org_id","slot","project_id","key_id","model","endpoint")
) WITH (fillfactor = 70);
--> statement-breakpoint
CREATE TABLE "usage_rollup_hours" (
	"org_id" text NOT NULL,
	"slot" timestamp with time zone NOT NULL,
	"project_id" text NOT NULL,
	"key_id" text NOT NULL,
	"model" text NOT NULL,
	"endpoint" text NOT NULL,
	"requests" bigint NOT NULL,
	"prompt_tokens" bigint NOT NULL,
	"completion_tokens" bigint NOT NULL,
	"cost_micros" bigint NOT NULL,
	CONSTRAINT "usage_rollup_hours_pkey" PRIMARY KEY("org_id","slot","project_id","key_id","model","endpoint")
) WITH (fillfactor = 70);
--> statement-breakpoint
CREATE TABLE "usage_rollup_days" (
	"org_id" text NOT NULL,
	"time_zone" text NOT NULL,
	"day" date NOT NULL,
	"project_id" text NOT NULL,
	"key_id" text NOT NULL,
	"model" text NOT NULL,
	"endpoint" text NOT NULL,
	"requests" bigint NOT NULL,
	"prompt_tokens" bigint NOT NULL,
	"completion_tokens" bigint NOT NULL,
	"cost_micros" bigint NOT NULL,
	CONSTRAINT "usage_rollup_days_pkey" PRIMARY KEY("org_id","time_zone","day","project_id","key_id","model","endpoint")
) WITH (fillfactor = 70);
--> statement-breakpoint
-- Every batch adds to the rows of its quarter-hour, hour and day: room is left on their pages so
-- that a new version of a row can stay on its page (a HOT update, no index entry of its own).
ALTER TABLE usage_totals SET (fillfactor = 70);
--> statement-breakpoint
CREATE TABLE "usage_retention" (
	"singleton" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"raw_from" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "usage_retention_singleton_check" CHECK ("usage_retention"."singleton")
);
--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "day_rollups_from" timestamp with time zone;
--> statement-breakpoint
-- Days of a zone are rolled up from the first local midnight at least an hour after the zone
-- became the organization's: a batch that read the old zone just before the change has only rows
-- of requests that started before it (give or take the gateways' clocks), and rows of earlier days
-- may have gone to either zone's days, so those days are summed from hours and quarter-hours.
CREATE FUNCTION nilegate_restart_day_rollups() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.billing_time_zone IS DISTINCT FROM OLD.billing_time_zone THEN
    NEW.day_rollups_from := (date_trunc('day', (now() + interval '1 hour') AT TIME ZONE NEW.billing_time_zone) + interval '1 day') AT TIME ZONE NEW.billing_time_zone;
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER organizations_restart_day_rollups BEFORE UPDATE OF billing_time_zone ON organizations FOR EACH ROW EXECUTE FUNCTION nilegate_restart_day_rollups();
--> statement-breakpoint
-- Every statement that inserts usage rows adds them to the sums, in its own transaction, so that
-- sums and rows agree in every snapshot whoever writes (a gateway's batch by COPY or INSERT, an
-- operator by hand); rows a replayed batch skips are not in the transition table. The rows are
-- summed once, per quarter-hour and group, and the hours, days and daily totals from those sums.
-- One statement: its parts write in one order, each in key order, so concurrent batches never
-- wait for each other in a cycle. Each transaction adds to one of 16 shards of a UTC day of
-- usage_totals, so concurrent batches of one organization rarely wait for each other's row lock
-- there. A batch costs an update of each rollup row it touches, so few large batches cost less
-- per row than many small ones (the gateway writes one a second).
CREATE FUNCTION nilegate_roll_up_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writer_shard smallint := (pg_current_xact_id()::text::bigint % 16)::smallint;
BEGIN
  WITH quarters AS (
    SELECT org_id, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00') AS slot, project_id, key_id, model, endpoint,
      COUNT(*) AS requests, SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens, SUM(cost_micros) AS cost_micros
    FROM new_rows GROUP BY 1, 2, 3, 4, 5, 6
  ),
  totals AS (
    INSERT INTO usage_totals AS totals (org_id, day, shard, cost_micros, requests)
    SELECT org_id, (slot AT TIME ZONE 'UTC')::date, writer_shard, SUM(cost_micros), SUM(requests) FROM quarters GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (org_id, day, shard) DO UPDATE SET cost_micros = totals.cost_micros + EXCLUDED.cost_micros, requests = totals.requests + EXCLUDED.requests
  ),
  quarter_sums AS (
    INSERT INTO usage_rollup_quarters AS sums (org_id, slot, project_id, key_id, model, endpoint, requests, prompt_tokens, completion_tokens, cost_micros)
    SELECT * FROM quarters ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (org_id, slot, project_id, key_id, model, endpoint) DO UPDATE
      SET requests = sums.requests + EXCLUDED.requests, prompt_tokens = sums.prompt_tokens + EXCLUDED.prompt_tokens,
        completion_tokens = sums.completion_tokens + EXCLUDED.completion_tokens, cost_micros = sums.cost_micros + EXCLUDED.cost_micros
  ),
  hour_sums AS (
    INSERT INTO usage_rollup_hours AS sums (org_id, slot, project_id, key_id, model, endpoint, requests, prompt_tokens, completion_tokens, cost_micros)
    SELECT org_id, date_bin('1 hour', slot, timestamptz '2000-01-01 00:00:00+00'), project_id, key_id, model, endpoint, SUM(requests), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost_micros)
    FROM quarters GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (org_id, slot, project_id, key_id, model, endpoint) DO UPDATE
      SET requests = sums.requests + EXCLUDED.requests, prompt_tokens = sums.prompt_tokens + EXCLUDED.prompt_tokens,
        completion_tokens = sums.completion_tokens + EXCLUDED.completion_tokens, cost_micros = sums.cost_micros + EXCLUDED.cost_micros
  )
  INSERT INTO usage_rollup_days AS sums (org_id, time_zone, day, project_id, key_id, model, endpoint, requests, prompt_tokens, completion_tokens, cost_micros)
  SELECT q.org_id, org.billing_time_zone, (q.slot AT TIME ZONE org.billing_time_zone)::date, q.project_id, q.key_id, q.model, q.endpoint,
    SUM(q.requests), SUM(q.prompt_tokens), SUM(q.completion_tokens), SUM(q.cost_micros)
  FROM quarters AS q JOIN organizations AS org ON org.id = q.org_id
  GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 2, 3, 4, 5, 6, 7
  ON CONFLICT (org_id, time_zone, day, project_id, key_id, model, endpoint) DO UPDATE
    SET requests = sums.requests + EXCLUDED.requests, prompt_tokens = sums.prompt_tokens + EXCLUDED.prompt_tokens,
      completion_tokens = sums.completion_tokens + EXCLUDED.completion_tokens, cost_micros = sums.cost_micros + EXCLUDED.cost_micros;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER usage_events_roll_up AFTER INSERT ON usage_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nilegate_roll_up_usage();
--> statement-breakpoint
-- A usage row is a debit: it is never changed, and removing one must not give the money back
-- unnoticed. Only ledger maintenance (`bun server/cli.ts ledger retain`, and moving rows out of the
-- default partition) removes rows, with nilegate.ledger_maintenance set in its transaction; what
-- it removes stays in the sums. Row triggers reach every partition; TRUNCATE of the whole table is
-- refused too, and inserting into a partition directly (which would skip the sums) likewise.
CREATE FUNCTION nilegate_keep_usage_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'UPDATE' AND current_setting('nilegate.ledger_maintenance', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'usage_events is the ledger: its rows are never changed or deleted (remove old months with `bun server/cli.ts ledger retain`, refund with a credit)'
    USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER usage_events_append_only BEFORE UPDATE OR DELETE ON usage_events FOR EACH ROW EXECUTE FUNCTION nilegate_keep_usage_rows();
--> statement-breakpoint
CREATE TRIGGER usage_events_no_truncate BEFORE TRUNCATE ON usage_events FOR EACH STATEMENT EXECUTE FUNCTION nilegate_keep_usage_rows();
--> statement-breakpoint
CREATE FUNCTION nilegate_refuse_partition_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('nilegate.ledger_maintenance', true) = 'on' THEN
    RETURN NULL;
  END IF;
  RAISE EXCEPTION 'insert usage rows into usage_events, not into its partition %, so that they are summed', TG_TABLE_NAME
    USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
-- The transaction that wrote a row, from its 32-bit xmin, for rows a recent snapshot may not have
-- held: the one of the latest 2^32 transaction ids that ends in those bits. A row restored from a
-- dump, or moved from another cluster, carries the xmin of the transaction that restored it here.
CREATE FUNCTION nilegate_row_xid(row_xmin xid) RETURNS xid8 LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT (next_xid - ((next_xid - row_xmin::text::bigint) & 4294967295))::text::xid8
  FROM (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next_xid) AS now_xid
$$;
--> statement-breakpoint
-- Rows of a month no partition holds (too far ahead, or of a month already removed).
CREATE TABLE usage_events_default PARTITION OF usage_events DEFAULT;
--> statement-breakpoint
CREATE TRIGGER usage_events_default_direct BEFORE INSERT ON usage_events_default FOR EACH STATEMENT EXECUTE FUNCTION nilegate_refuse_partition_insert();
--> statement-breakpoint
-- Creates the partition of the UTC month holding `month`, with the rows the default partition
-- took for it; false when it exists or another partition covers that month. Serialised by an
-- advisory lock, so gateways may all call it. Attaching takes no lock that stops inserts into the
-- other partitions; the default partition is locked while it is checked.
CREATE FUNCTION nilegate_create_usage_month(month date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  starts timestamptz := date_trunc('month', month)::timestamp AT TIME ZONE 'UTC';
  ends timestamptz := (date_trunc('month', month) + interval '1 month')::timestamp AT TIME ZONE 'UTC';
  partition_name text := 'usage_events_' || to_char(month, '"y"YYYY"m"MM');
  maintenance text := current_setting('nilegate.ledger_maintenance', true);
BEGIN
  IF to_regclass(partition_name) IS NOT NULL THEN
    RETURN false;
  END IF;
  PERFORM pg_advisory_xact_lock(7202544017);
  IF to_regclass(partition_name) IS NOT NULL THEN
    RETURN false;
  END IF;
  BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE usage_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', partition_name);
    PERFORM set_config('nilegate.ledger_maintenance', 'on', true);
    EXECUTE format('WITH moved AS (DELETE FROM usage_events_default WHERE created_at >= $1 AND created_at < $2 RETURNING *) INSERT INTO %I SELECT * FROM moved', partition_name)
      USING starts, ends;
    EXECUTE format('ALTER TABLE usage_events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', partition_name, starts, ends);
    EXECUTE format('CREATE TRIGGER %I BEFORE INSERT ON %I FOR EACH STATEMENT EXECUTE FUNCTION nilegate_refuse_partition_insert()', partition_name || '_direct', partition_name);
    PERFORM set_config('nilegate.ledger_maintenance', COALESCE(maintenance, ''), true);
  EXCEPTION WHEN invalid_object_definition THEN
    -- "would overlap": the month is part of another partition (usage_events_legacy).
    RETURN false;
  END;
  RETURN true;
END
$$;
--> statement-breakpoint
-- Rows written before: summed into the rollups (usage_totals already holds them), then attached as
-- the partition of every month up to the one after the latest of them and now.
DO $$
DECLARE
  bound timestamptz;
BEGIN
  IF NOT EXISTS (SELECT FROM usage_events_legacy) THEN
    DROP TABLE usage_events_legacy;
    RETURN;
  END IF;
  INSERT INTO usage_rollup_quarters (org_id, slot, project_id, key_id, model, endpoint, requests, prompt_tokens, completion_tokens, cost_micros)
  SELECT org_id, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), project_id, key_id, model, endpoint,
    COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost_micros)
  FROM usage_events_legacy GROUP BY 1, 2, 3, 4, 5, 6;
  INSERT INTO usage_rollup_hours (org_id, slot, project_id, key_id, model, endpoint, requests, prompt_tokens, completion_tokens, cost_micros)
  SELECT org_id, date_bin('1 hour', slot, timestamptz '2000-01-01 00:00:00+00'), project_id, key_id, model, endpoint,
    SUM(requests), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost_micros)
  FROM usage_rollup_quarters GROUP BY 1, 2, 3, 4, 5, 6;
  INSERT INTO usage_rollup_days (org_id, time_zone, day, project_id, key_id, model, endpoint, requests, prompt_tokens, completion_tokens, cost_micros)
  SELECT sums.org_id, org.billing_time_zone, (sums.slot AT TIME ZONE org.billing_time_zone)::date, sums.project_id, sums.key_id, sums.model, sums.endpoint,
    SUM(sums.requests), SUM(sums.prompt_tokens), SUM(sums.completion_tokens), SUM(sums.cost_micros)
  FROM usage_rollup_quarters AS sums JOIN organizations AS org ON org.id = sums.org_id
  GROUP BY 1, 2, 3, 4, 5, 6, 7;
  SELECT (date_trunc('month', GREATEST(max(created_at), now()) AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC' INTO bound FROM usage_events_legacy;
  EXECUTE format('ALTER TABLE usage_events ATTACH PARTITION usage_events_legacy FOR VALUES FROM (MINVALUE) TO (%L)', bound);
  CREATE TRIGGER usage_events_legacy_direct BEFORE INSERT ON usage_events_legacy FOR EACH STATEMENT EXECUTE FUNCTION nilegate_refuse_partition_insert();
END
$$;
--> statement-breakpoint
SELECT nilegate_create_usage_month((date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => ahead))::date)
FROM generate_series(-1, 3) AS ahead;
