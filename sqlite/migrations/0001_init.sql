CREATE TABLE members (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    disabled   INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    member_id  INTEGER NOT NULL REFERENCES members(id),
    label      TEXT NOT NULL DEFAULT '',
    hash       BLOB NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE INDEX api_keys_member ON api_keys(member_id);

-- doc is the imported document without the derived fields; see certorder.Order.
CREATE TABLE orders (
    id          INTEGER PRIMARY KEY,
    member_id   INTEGER NOT NULL REFERENCES members(id),
    common_name TEXT NOT NULL,
    status      TEXT NOT NULL,
    valid_till  TEXT NOT NULL,
    renewed_by  INTEGER,
    doc         BLOB NOT NULL,
    cert_end    INTEGER NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX orders_member ON orders(member_id, id);
CREATE INDEX orders_renewed_by ON orders(renewed_by);
