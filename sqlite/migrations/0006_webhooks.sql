-- Webhooks: members' endpoints, the outbox of order events (written in the
-- transaction of the change: by the triggers below until 0008 dropped them,
-- since then by certorder itself; a restore emits nothing), and deliveries.
CREATE TABLE webhook_endpoints (
    id               INTEGER PRIMARY KEY,
    member_id        INTEGER NOT NULL REFERENCES members(id),
    url              TEXT NOT NULL,
    event_types      TEXT NOT NULL DEFAULT '',
    secret           TEXT NOT NULL,
    previous_secret  TEXT NOT NULL DEFAULT '',
    previous_expires TEXT,
    enabled          INTEGER NOT NULL DEFAULT 1,
    disabled_reason  TEXT NOT NULL DEFAULT '',
    created_at       TEXT NOT NULL,
    last_success     TEXT,
    failing_since    TEXT
);
CREATE INDEX webhook_endpoints_member ON webhook_endpoints(member_id);

CREATE TABLE webhook_events (
    id         INTEGER PRIMARY KEY,
    member_id  INTEGER NOT NULL,
    type       TEXT NOT NULL,
    data       TEXT NOT NULL,
    at         TEXT NOT NULL,
    fanned_out INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX webhook_events_pending ON webhook_events(fanned_out, id);

CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY,
    endpoint_id     INTEGER NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    event_type      TEXT NOT NULL,
    msg_id          TEXT NOT NULL UNIQUE,
    body            BLOB NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt    TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    last_attempt    TEXT,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_class      TEXT NOT NULL DEFAULT '',
    last_latency_us INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_attempt);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, id);

-- order.expiring is told once per order and threshold (days).
CREATE TABLE expiry_notices (
    order_id  INTEGER NOT NULL,
    threshold INTEGER NOT NULL,
    PRIMARY KEY (order_id, threshold)
);

CREATE TRIGGER orders_renewed_event AFTER UPDATE OF renewed_by ON orders
WHEN NEW.renewed_by IS NOT NULL AND NEW.renewed_by IS NOT OLD.renewed_by
BEGIN
    INSERT INTO webhook_events (member_id, type, data, at)
    VALUES (NEW.member_id, 'order.renewed', json_object('order_id', NEW.id, 'renewed_order_id', NEW.renewed_by),
            strftime('%Y-%m-%dT%H:%M:%f000000Z', 'now'));
END;

CREATE TRIGGER orders_status_event AFTER UPDATE OF status ON orders
WHEN NEW.status IS NOT OLD.status
BEGIN
    INSERT INTO webhook_events (member_id, type, data, at)
    VALUES (NEW.member_id, 'order.status_changed',
            json_object('order_id', NEW.id, 'status', NEW.status, 'previous_status', OLD.status),
            strftime('%Y-%m-%dT%H:%M:%f000000Z', 'now'));
END;
