CREATE TABLE "deployments" (
	"id" text PRIMARY KEY NOT NULL,
	"model_id" text NOT NULL,
	"provider" text NOT NULL,
	"base_url" text,
	"upstream_model" text NOT NULL,
	"region" text NOT NULL,
	"weight" integer NOT NULL,
	"max_concurrent" integer,
	"connect_timeout_ms" integer NOT NULL,
	"first_token_timeout_ms" integer NOT NULL,
	"idle_timeout_ms" integer NOT NULL,
	"total_timeout_ms" integer NOT NULL,
	"api_key_env" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "deployments_provider_check" CHECK ("deployments"."provider" in ('simulator', 'openai-compatible')),
	CONSTRAINT "deployments_weight_check" CHECK ("deployments"."weight" > 0),
	CONSTRAINT "deployments_max_concurrent_check" CHECK ("deployments"."max_concurrent" > 0)
);
--> statement-breakpoint
CREATE INDEX "deployments_model_id_idx" ON "deployments" USING btree ("model_id");