-- The audit trail in segments (certorder.EncodeAuditSegment): one row per
-- batch the server's writer flushes, indexed only by time, so that a
-- request's entry costs an append to a buffer, not a row and two index
-- entries. audit_log keeps the rows written before: read and pruned as
-- before, until retention empties it.
CREATE TABLE audit_segments (
    id       BIGSERIAL PRIMARY KEY,
    first_at BIGINT NOT NULL, -- the oldest entry, in Unix microseconds
    last_at  BIGINT NOT NULL, -- the newest
    entries  INTEGER NOT NULL,
    data     BYTEA NOT NULL
);
CREATE INDEX audit_segments_last_at ON audit_segments(last_at);
-- Stored out of line without compression: pglz over every segment cost
-- more CPU than the disk it saves.
ALTER TABLE audit_segments ALTER COLUMN data SET STORAGE EXTERNAL;

-- Serving instances cache credentials and orders (postgres/cache.go). Every
-- statement that changes members, keys or orders notifies them, on a
-- channel of this schema's own, once per transaction (NOTIFY folds equal
-- notifications), when it commits.
CREATE FUNCTION certorder_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('certorder_' || md5(TG_TABLE_SCHEMA), '');
    RETURN NULL;
END
$$;
CREATE TRIGGER members_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON members
    FOR EACH STATEMENT EXECUTE FUNCTION certorder_changed();
CREATE TRIGGER api_keys_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION certorder_changed();
CREATE TRIGGER orders_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON orders
    FOR EACH STATEMENT EXECUTE FUNCTION certorder_changed();

-- The instances that cache, so that a command taking access away can wait
-- until every live one has applied it: an instance records the last
-- confirmation token it received (tokens come from the sequence, in order,
-- on the same channel, after the change), and beats every second.
-- listening is false while its notification connection is down: it then
-- reads everything from the database. epoch orders its listening sessions.
CREATE TABLE cache_instances (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    seen_at    TIMESTAMPTZ NOT NULL,
    listening  BOOLEAN NOT NULL,
    epoch      BIGINT NOT NULL,
    applied    BIGINT NOT NULL
);
CREATE SEQUENCE cache_confirmations;
