CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"project_id" text NOT NULL,
	"name" text NOT NULL,
	"secret_hash" text NOT NULL,
	"display_prefix" text NOT NULL,
	"created_by_user_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"last_used_at" timestamp with time zone,
	"rpm_limit" integer,
	"monthly_spend_cap_micros" bigint,
	"ip_allow_list" text[] DEFAULT '{}'::text[] NOT NULL,
	"scopes" text[] DEFAULT '{}'::text[] NOT NULL,
	CONSTRAINT "api_keys_secret_hash_unique" UNIQUE("secret_hash"),
	CONSTRAINT "api_keys_rpm_limit_check" CHECK ("api_keys"."rpm_limit" > 0),
	CONSTRAINT "api_keys_monthly_spend_cap_check" CHECK ("api_keys"."monthly_spend_cap_micros" >= 0)
);
--> statement-breakpoint
CREATE TABLE "credit_transactions" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"amount_micros" bigint NOT NULL,
	"kind" text NOT NULL,
	"idempotency_key" text,
	"note" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "credit_transactions_idempotency_key_unique" UNIQUE("idempotency_key")
);
--> statement-breakpoint
CREATE TABLE "memberships" (
	"org_id" text NOT NULL,
	"user_id" text NOT NULL,
	"role" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "memberships_pkey" PRIMARY KEY("org_id","user_id"),
	CONSTRAINT "memberships_role_check" CHECK ("memberships"."role" in ('owner', 'admin', 'member', 'reader'))
);
--> statement-breakpoint
CREATE TABLE "organizations" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"plan_tier" text DEFAULT 'developer' NOT NULL,
	"custom_rpm_ceiling" integer,
	"status" text DEFAULT 'active' NOT NULL,
	"balance_micros" bigint DEFAULT 0 NOT NULL,
	"billing_time_zone" text DEFAULT 'Africa/Cairo' NOT NULL,
	"requires_region" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "organizations_plan_tier_check" CHECK ("organizations"."plan_tier" in ('free', 'developer', 'team', 'enterprise')),
	CONSTRAINT "organizations_status_check" CHECK ("organizations"."status" in ('active', 'suspended')),
	CONSTRAINT "organizations_custom_rpm_ceiling_check" CHECK ("organizations"."custom_rpm_ceiling" > 0)
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"name" text NOT NULL,
	"monthly_spend_cap_micros" bigint,
	"rpm_override" integer,
	"enabled_models" text[],
	"archived_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "projects_org_id_name_unique" UNIQUE("org_id","name"),
	CONSTRAINT "projects_id_org_id_unique" UNIQUE("id","org_id"),
	CONSTRAINT "projects_rpm_override_check" CHECK ("projects"."rpm_override" > 0),
	CONSTRAINT "projects_monthly_spend_cap_check" CHECK ("projects"."monthly_spend_cap_micros" >= 0)
);
--> statement-breakpoint
CREATE TABLE "usage_events" (
	"request_id" text PRIMARY KEY NOT NULL,
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
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"password_hash" text NOT NULL,
	"email_verified_at" timestamp with time zone,
	"is_operator" boolean DEFAULT false NOT NULL,
	"disabled_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "users_email_unique" UNIQUE("email"),
	CONSTRAINT "users_email_lower_case_check" CHECK ("users"."email" = lower("users"."email"))
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_created_by_user_id_users_id_fk" FOREIGN KEY ("created_by_user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_project_in_org_fk" FOREIGN KEY ("project_id","org_id") REFERENCES "public"."projects"("id","org_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_transactions" ADD CONSTRAINT "credit_transactions_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_org_id_index" ON "api_keys" USING btree ("org_id");--> statement-breakpoint
CREATE INDEX "api_keys_project_id_index" ON "api_keys" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "credit_transactions_org_id_created_at_index" ON "credit_transactions" USING btree ("org_id","created_at");--> statement-breakpoint
CREATE INDEX "memberships_user_id_index" ON "memberships" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "usage_events_org_id_created_at_index" ON "usage_events" USING btree ("org_id","created_at");