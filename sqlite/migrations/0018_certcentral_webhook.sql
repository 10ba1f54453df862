-- CertCentral's webhook (docs/SYNC.md, "CertCentral's webhook"): one row,
-- the last event the receiver accepted and the last challenge token it was
-- sent, which admin sync webhook register sends back. The order events
-- themselves are jobs (kind certcentral.event).
CREATE TABLE certcentral_webhook (
    id                   INTEGER PRIMARY KEY CHECK (id = 1),
    last_event           TEXT NOT NULL DEFAULT '',
    last_order_id        INTEGER NOT NULL DEFAULT 0,
    last_event_at        TEXT,
    challenge_token      TEXT NOT NULL DEFAULT '',
    challenge_webhook_id INTEGER NOT NULL DEFAULT 0,
    challenge_at         TEXT
);
INSERT INTO certcentral_webhook (id) VALUES (1);
