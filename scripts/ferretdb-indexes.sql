-- PostgreSQL indexes that let FerretDB v1.24's reads use an index (scripts/ferretdb.sh applies this).
--
-- FerretDB sends a top-level equality filter on a scalar as `_jsonb->'field' @> '<json>'` and builds its
-- own indexes as btree expressions that such a filter cannot use, so every read is a sequential scan
-- (../shared/STACK-NOTES.md). A GIN `jsonb_path_ops` index on the same expression serves `@>`. An event
-- trigger adds them to every table FerretDB creates for an `events`, `organizations`, `api_keys`, `api_key_uses`, `sessions`,
-- `idempotency_keys`, `ledger_tiles`, `ledger_checkpoints`, `ledger_heads`, `ledger_entries`, `ledger_cosignatures`, `ledger_witnesses`, `export_leases`, `retention_state`, `streams` or `stream_progress` collection
-- (its tables are named `<collection>_<hash>`), and the block at the end to the tables that exist. The
-- service knows nothing of this: on MongoDB its own compound indexes do the work.
--
-- What they serve: a point read ({tenant, _id}), an Idempotency-Key's claim ({_id}), a ledger tile
-- ({_id}), a checkpoint ({_id}) and a log's newest one (its head, {_id}), the audit's list of an organization's
-- checkpoints ({tenant}: still sorted in Go), the writer's head probe ({tenant, seq}), and list or
-- export filters by actor, action, resource or organization_id. Not an unfiltered list: FerretDB sorts
-- in Go after reading every event of the tenant, whatever PostgreSQL does.

-- Without it PostgreSQL soon settles on a generic plan for FerretDB's prepared statements, which cannot
-- look inside the parameter and so never picks these indexes.
ALTER DATABASE :"dbname" SET plan_cache_mode = force_custom_plan;

CREATE OR REPLACE FUNCTION audit_ledger_gin_fields(tbl text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN tbl ~ '^events_[0-9a-f]{8}$' THEN ARRAY['_id', 'seq', 'actor_id', 'action', 'resource_id', 'organization_id']
    WHEN tbl ~ '^(organizations|api_keys|api_key_uses|sessions|idempotency_keys|ledger_heads)_[0-9a-f]{8}$' THEN ARRAY['_id']
    WHEN tbl ~ '^ledger_tiles_[0-9a-f]{8}$' THEN ARRAY['_id', 'tile']
    WHEN tbl ~ '^ledger_checkpoints_[0-9a-f]{8}$' THEN ARRAY['_id', 'tenant']
    WHEN tbl ~ '^ledger_entries_[0-9a-f]{8}$' THEN ARRAY['_id', 'checkpoint', 'tenant']
    WHEN tbl ~ '^ledger_cosignatures_[0-9a-f]{8}$' THEN ARRAY['_id', 'checkpoint']
    WHEN tbl ~ '^(ledger_witnesses|export_leases|retention_state)_[0-9a-f]{8}$' THEN ARRAY['_id']
    WHEN tbl ~ '^(streams|stream_progress)_[0-9a-f]{8}$' THEN ARRAY['_id', 'tenant']
    ELSE ARRAY[]::text[]
  END
$$;

CREATE OR REPLACE FUNCTION audit_ledger_gin_index(schema_name text, tbl text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  field text;
BEGIN
  FOREACH field IN ARRAY audit_ledger_gin_fields(tbl) LOOP
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I USING gin ((_jsonb->%L) jsonb_path_ops) WITH (fastupdate = off)',
                   left(tbl, 40) || '_gin' || replace(field, '_', ''), schema_name, tbl, field);
    -- Indexes made before this setting: the same. With fastupdate on, new entries wait in a pending list
    -- that every search scans linearly: after a burst of inserts a point read took 40 ms instead of 0.05.
    EXECUTE format('ALTER INDEX %I.%I SET (fastupdate = off)', schema_name, left(tbl, 40) || '_gin' || replace(field, '_', ''));
  END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION audit_ledger_gin_on_create() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
  obj record;
BEGIN
  FOR obj IN SELECT * FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE TABLE' LOOP
    PERFORM audit_ledger_gin_index(obj.schema_name, split_part(obj.object_identity, '.', 2));
  END LOOP;
END
$$;

DROP EVENT TRIGGER IF EXISTS audit_ledger_gin;
CREATE EVENT TRIGGER audit_ledger_gin ON ddl_command_end WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION audit_ledger_gin_on_create();

DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relkind = 'r' AND cardinality(audit_ledger_gin_fields(c.relname)) > 0 LOOP
    PERFORM audit_ledger_gin_index(t.nspname, t.relname);
  END LOOP;
END
$$;
