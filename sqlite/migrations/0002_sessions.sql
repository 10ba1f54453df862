CREATE TABLE sessions (
    token_hash BLOB PRIMARY KEY,
    member_id  INTEGER NOT NULL REFERENCES members(id),
    key_id     TEXT NOT NULL REFERENCES api_keys(id),
    csrf       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX sessions_expires ON sessions(expires_at);
