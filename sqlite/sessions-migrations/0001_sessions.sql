-- The web page's sessions, in a file of their own beside the store's (see
-- sqlite.SessionsPath). member_id and key_id name rows of the store's
-- file: FindSession reads their state there.
CREATE TABLE sessions (
    token_hash BLOB PRIMARY KEY,
    member_id  INTEGER NOT NULL,
    key_id     TEXT NOT NULL,
    csrf       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX sessions_expires ON sessions(expires_at);
CREATE INDEX sessions_member ON sessions(member_id);
