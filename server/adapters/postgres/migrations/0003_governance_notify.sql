-- The database announces the changes that gateways cache, whoever makes them (the API, or an
-- UPDATE typed by hand): a NOTIFY on the channel that gateways without Redis LISTEN to
-- (adapters/postgres/change-bus.ts), in the bus's message format. Only the columns an API key's
-- identity reads count, so usage batches moving last_used_at announce nothing.
-- TG_ARGV[0] names the column holding the organization's id.
CREATE FUNCTION nilegate_announce_organization_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('nilegate_governance_changes', json_build_object('from', 'database', 'change', json_build_object('kind', 'organization', 'orgId', to_jsonb(OLD) ->> TG_ARGV[0]))::text);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION nilegate_announce_catalog_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('nilegate_governance_changes', json_build_object('from', 'database', 'change', json_build_object('kind', TG_ARGV[0]))::text);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER organizations_announce_update AFTER UPDATE ON organizations FOR EACH ROW
  WHEN ((OLD.status, OLD.plan_tier, OLD.custom_rpm_ceiling, OLD.billing_time_zone, OLD.requires_region, OLD.allowed_models)
    IS DISTINCT FROM (NEW.status, NEW.plan_tier, NEW.custom_rpm_ceiling, NEW.billing_time_zone, NEW.requires_region, NEW.allowed_models))
  EXECUTE FUNCTION nilegate_announce_organization_change('id');
--> statement-breakpoint
CREATE TRIGGER organizations_announce_delete AFTER DELETE ON organizations FOR EACH ROW EXECUTE FUNCTION nilegate_announce_organization_change('id');
--> statement-breakpoint
CREATE TRIGGER projects_announce_update AFTER UPDATE ON projects FOR EACH ROW
  WHEN ((OLD.org_id, OLD.monthly_spend_cap_micros, OLD.rpm_override, OLD.enabled_models, OLD.archived_at)
    IS DISTINCT FROM (NEW.org_id, NEW.monthly_spend_cap_micros, NEW.rpm_override, NEW.enabled_models, NEW.archived_at))
  EXECUTE FUNCTION nilegate_announce_organization_change('org_id');
--> statement-breakpoint
CREATE TRIGGER projects_announce_delete AFTER DELETE ON projects FOR EACH ROW EXECUTE FUNCTION nilegate_announce_organization_change('org_id');
--> statement-breakpoint
CREATE TRIGGER api_keys_announce_update AFTER UPDATE ON api_keys FOR EACH ROW
  WHEN ((OLD.org_id, OLD.project_id, OLD.secret_hash, OLD.expires_at, OLD.revoked_at, OLD.rpm_limit, OLD.monthly_spend_cap_micros, OLD.ip_allow_list, OLD.scopes)
    IS DISTINCT FROM (NEW.org_id, NEW.project_id, NEW.secret_hash, NEW.expires_at, NEW.revoked_at, NEW.rpm_limit, NEW.monthly_spend_cap_micros, NEW.ip_allow_list, NEW.scopes))
  EXECUTE FUNCTION nilegate_announce_organization_change('org_id');
--> statement-breakpoint
CREATE TRIGGER api_keys_announce_delete AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION nilegate_announce_organization_change('org_id');
--> statement-breakpoint
CREATE TRIGGER model_retirements_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON model_retirements FOR EACH STATEMENT
  EXECUTE FUNCTION nilegate_announce_catalog_change('model_retirements');
--> statement-breakpoint
CREATE TRIGGER deployments_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON deployments FOR EACH STATEMENT
  EXECUTE FUNCTION nilegate_announce_catalog_change('deployments');
