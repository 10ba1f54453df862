CREATE TABLE sessions (
    token_hash BYTEA PRIMARY KEY,
    member_id  BIGINT NOT NULL REFERENCES members(id),
    key_id     TEXT NOT NULL REFERENCES api_keys(id),
    csrf       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_expires ON sessions(expires_at);
