-- Webhooks: members' endpoints, the outbox of order events (written in the
-- transaction of the change: by the trigger below until 0011 dropped it,
-- since then by certorder itself; a restore emits nothing), and deliveries.
CREATE TABLE webhook_endpoints (
    id               BIGSERIAL PRIMARY KEY,
    member_id        BIGINT NOT NULL REFERENCES members(id),
    url              TEXT NOT NULL,
    event_types      TEXT NOT NULL DEFAULT '',
    secret           TEXT NOT NULL,
    previous_secret  TEXT NOT NULL DEFAULT '',
    previous_expires TIMESTAMPTZ,
    enabled          BOOLEAN NOT NULL DEFAULT true,
    disabled_reason  TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL,
    last_success     TIMESTAMPTZ,
    failing_since    TIMESTAMPTZ
);
CREATE INDEX webhook_endpoints_member ON webhook_endpoints(member_id);

CREATE TABLE webhook_events (
    id         BIGSERIAL PRIMARY KEY,
    member_id  BIGINT NOT NULL,
    type       TEXT NOT NULL,
    data       TEXT NOT NULL,
    at         TIMESTAMPTZ NOT NULL,
    fanned_out BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX webhook_events_pending ON webhook_events(id) WHERE NOT fanned_out;

CREATE TABLE webhook_deliveries (
    id              BIGSERIAL PRIMARY KEY,
    endpoint_id     BIGINT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    event_type      TEXT NOT NULL,
    msg_id          TEXT NOT NULL UNIQUE,
    body            BYTEA NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt    TIMESTAMPTZ NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    last_attempt    TIMESTAMPTZ,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_class      TEXT NOT NULL DEFAULT '',
    last_latency_us BIGINT NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, id);

-- order.expiring is told once per order and threshold (days).
CREATE TABLE expiry_notices (
    order_id  BIGINT NOT NULL,
    threshold INTEGER NOT NULL,
    PRIMARY KEY (order_id, threshold)
);

CREATE FUNCTION certorder_order_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.renewed_by IS NOT NULL AND NEW.renewed_by IS DISTINCT FROM OLD.renewed_by THEN
        INSERT INTO webhook_events (member_id, type, data, at)
        VALUES (NEW.member_id, 'order.renewed',
                json_build_object('order_id', NEW.id, 'renewed_order_id', NEW.renewed_by)::text, now());
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status THEN
        INSERT INTO webhook_events (member_id, type, data, at)
        VALUES (NEW.member_id, 'order.status_changed',
                json_build_object('order_id', NEW.id, 'status', NEW.status, 'previous_status', OLD.status)::text, now());
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER orders_events AFTER UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION certorder_order_events();
