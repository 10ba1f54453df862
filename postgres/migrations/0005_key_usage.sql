-- key_id: the key that authenticated the call; count: how many requests a
-- row stands for (refusals before authentication are aggregated).
ALTER TABLE audit_log ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
-- When each key last authenticated a call: the web page's "last used".
CREATE TABLE key_usage (
    key_id    TEXT PRIMARY KEY,
    last_used TIMESTAMPTZ NOT NULL
);
