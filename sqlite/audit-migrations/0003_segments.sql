-- The audit trail in segments (certorder.EncodeAuditSegment): one row per
-- batch the server's writer flushes, indexed only by time, so that a
-- request's entry costs an append to a buffer, not a row and two index
-- entries. audit_log keeps the rows written before: read and pruned as
-- before, until retention empties it.
CREATE TABLE audit_segments (
    id       INTEGER PRIMARY KEY,
    first_at INTEGER NOT NULL, -- the oldest entry, in Unix microseconds
    last_at  INTEGER NOT NULL, -- the newest
    entries  INTEGER NOT NULL,
    data     BLOB NOT NULL
);
CREATE INDEX audit_segments_last_at ON audit_segments(last_at);
