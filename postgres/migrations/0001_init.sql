CREATE TABLE members (
    id         BIGSERIAL PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    disabled   BOOLEAN NOT NULL DEFAULT false,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    member_id  BIGINT NOT NULL REFERENCES members(id),
    label      TEXT NOT NULL DEFAULT '',
    hash       BYTEA NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ
);
CREATE INDEX api_keys_member ON api_keys(member_id);

-- doc is the imported document without the derived fields; see certorder.Order.
-- BYTEA, not JSONB: JSONB would reorder keys and reformat numbers.
CREATE TABLE orders (
    id          BIGINT PRIMARY KEY,
    member_id   BIGINT NOT NULL REFERENCES members(id),
    common_name TEXT NOT NULL,
    status      TEXT NOT NULL,
    valid_till  TEXT NOT NULL,
    renewed_by  BIGINT,
    doc         BYTEA NOT NULL,
    cert_end    INTEGER NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX orders_member ON orders(member_id, id);
CREATE INDEX orders_renewed_by ON orders(renewed_by);
