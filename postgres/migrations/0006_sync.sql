-- The CertCentral sync (issue 11). container_links: which member takes the
-- orders of a division (CertCentral container); one member per division.
CREATE TABLE container_links (
    container_id BIGINT PRIMARY KEY,
    member_id    BIGINT NOT NULL REFERENCES members(id),
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX container_links_member ON container_links(member_id);

-- Orders the sync found no owner for: visible to nobody, kept so that a
-- later link (or a renewal of a stored order) hands them over without
-- fetching them again. doc is as in orders.
CREATE TABLE unassigned_orders (
    id           BIGINT PRIMARY KEY,
    container_id BIGINT NOT NULL,
    status       TEXT NOT NULL,
    valid_till   TEXT NOT NULL,
    renewed_by   BIGINT,
    doc          BYTEA NOT NULL,
    doc_format   INTEGER NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX unassigned_orders_container ON unassigned_orders(container_id, id);
CREATE INDEX unassigned_orders_renewed_by ON unassigned_orders(renewed_by);

-- The cursor: where the next incremental run starts (NULL: a full run).
CREATE TABLE sync_state (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    cursor TIMESTAMPTZ
);
INSERT INTO sync_state (id, cursor) VALUES (1, NULL);

-- The last runs (certorder.MaxSyncRuns of them); summary is JSON.
CREATE TABLE sync_runs (
    id          BIGSERIAL PRIMARY KEY,
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ NOT NULL,
    instance    TEXT NOT NULL,
    ok          BOOLEAN NOT NULL,
    error       TEXT NOT NULL,
    summary     TEXT NOT NULL,
    cursor      TIMESTAMPTZ NOT NULL
);
