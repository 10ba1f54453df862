-- The CertCentral sync (issue 11). container_links: which member takes the
-- orders of a division (CertCentral container); one member per division.
CREATE TABLE container_links (
    container_id INTEGER PRIMARY KEY,
    member_id    INTEGER NOT NULL REFERENCES members(id),
    created_at   TEXT NOT NULL
);
CREATE INDEX container_links_member ON container_links(member_id);

-- Orders the sync found no owner for: visible to nobody, kept so that a
-- later link (or a renewal of a stored order) hands them over without
-- fetching them again. doc is as in orders.
CREATE TABLE unassigned_orders (
    id           INTEGER PRIMARY KEY,
    container_id INTEGER NOT NULL,
    status       TEXT NOT NULL,
    valid_till   TEXT NOT NULL,
    renewed_by   INTEGER,
    doc          BLOB NOT NULL,
    doc_format   INTEGER NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX unassigned_orders_container ON unassigned_orders(container_id, id);
CREATE INDEX unassigned_orders_renewed_by ON unassigned_orders(renewed_by);

-- The cursor: where the next incremental run starts (NULL: a full run).
CREATE TABLE sync_state (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    cursor TEXT
);
INSERT INTO sync_state (id, cursor) VALUES (1, NULL);

-- The last runs (certorder.MaxSyncRuns of them); summary is JSON.
CREATE TABLE sync_runs (
    id          INTEGER PRIMARY KEY,
    started_at  TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    instance    TEXT NOT NULL,
    ok          INTEGER NOT NULL,
    error       TEXT NOT NULL,
    summary     TEXT NOT NULL,
    cursor      TEXT NOT NULL
);
