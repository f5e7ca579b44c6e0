CREATE TABLE "spend_checkpoints" (
	"org_id" text NOT NULL,
	"month" text NOT NULL,
	"time_zone" text NOT NULL,
	"snapshot" "pg_snapshot" NOT NULL,
	"epoch" bigint NOT NULL,
	"spends" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "spend_checkpoints_org_id_month_time_zone_pk" PRIMARY KEY("org_id","month","time_zone")
);
--> statement-breakpoint
CREATE TABLE "usage_epochs" (
	"org_id" text PRIMARY KEY NOT NULL,
	"epoch" bigint NOT NULL
);
--> statement-breakpoint
-- IF NOT EXISTS: on a large ledger an operator builds it beforehand, CONCURRENTLY (README).
CREATE INDEX IF NOT EXISTS "usage_events_org_id_inserted_xid_index" ON "usage_events" USING btree ("org_id","inserted_xid");
--> statement-breakpoint
-- Spend checkpoints (adapters/postgres/ledger-repository.ts) hold an organization's month spends
-- as of a snapshot; a later read adds the rows the snapshot did not hold, by the transaction that
-- wrote them (inserted_xid, the column's default). Rows changed or removed, or inserted with
-- another transaction id than their own, would go unseen: such statements move the organization's
-- epoch, and checkpoints read at an earlier epoch are not used.
CREATE FUNCTION nilegate_count_usage_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO usage_epochs AS epochs (org_id, epoch)
    SELECT org_id, 1 FROM new_rows WHERE inserted_xid IS DISTINCT FROM pg_current_xact_id() GROUP BY org_id ORDER BY org_id
    ON CONFLICT (org_id) DO UPDATE SET epoch = epochs.epoch + 1;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO usage_epochs AS epochs (org_id, epoch)
    SELECT org_id, 1 FROM old_rows GROUP BY org_id ORDER BY org_id
    ON CONFLICT (org_id) DO UPDATE SET epoch = epochs.epoch + 1;
  ELSE
    INSERT INTO usage_epochs AS epochs (org_id, epoch)
    SELECT org_id, 1 FROM (SELECT org_id FROM old_rows UNION SELECT org_id FROM new_rows) AS changed ORDER BY org_id
    ON CONFLICT (org_id) DO UPDATE SET epoch = epochs.epoch + 1;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER usage_events_count_inserted AFTER INSERT ON usage_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nilegate_count_usage_changes();
--> statement-breakpoint
CREATE TRIGGER usage_events_count_deleted AFTER DELETE ON usage_events REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION nilegate_count_usage_changes();
--> statement-breakpoint
CREATE TRIGGER usage_events_count_updated AFTER UPDATE ON usage_events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nilegate_count_usage_changes();
--> statement-breakpoint
-- Emptying the ledger empties what is derived from it.
CREATE FUNCTION nilegate_forget_usage_sums() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM usage_totals;
  DELETE FROM spend_checkpoints;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER usage_events_truncated AFTER TRUNCATE ON usage_events FOR EACH STATEMENT EXECUTE FUNCTION nilegate_forget_usage_sums();
