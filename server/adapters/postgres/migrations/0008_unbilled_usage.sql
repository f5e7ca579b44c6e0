ALTER TABLE "usage_events" ADD COLUMN "unbilled_prompt_tokens" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "usage_events" ADD COLUMN "unbilled_completion_tokens" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "usage_events" ADD COLUMN "unbilled_micros" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "usage_events_unbilled_index" ON "usage_events" USING btree ("created_at","request_id") WHERE "usage_events"."unbilled_micros" > 0;