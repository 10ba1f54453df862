-- E-mail notices (docs/OPERATIONS.md, "E-mail notices"): members' addresses,
-- and the outbox of messages to them, fed from the order events of
-- webhook_events (noticed: queued for the addresses already). Webhook
-- endpoints get a format: the signed Standard Webhooks payload or a chat
-- room's readable line (Slack's incoming-webhook JSON).
ALTER TABLE webhook_endpoints ADD COLUMN format TEXT NOT NULL DEFAULT 'standard';

ALTER TABLE webhook_events ADD COLUMN noticed INTEGER NOT NULL DEFAULT 0;
-- The events before this version are nobody's notices.
UPDATE webhook_events SET noticed = 1;
CREATE INDEX webhook_events_unnoticed ON webhook_events(id) WHERE noticed = 0;

CREATE TABLE notice_addresses (
    id              INTEGER PRIMARY KEY,
    member_id       INTEGER NOT NULL REFERENCES members(id),
    address         TEXT NOT NULL,
    lang            TEXT NOT NULL,
    event_types     TEXT NOT NULL DEFAULT '',
    secret          TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    confirmed_at    TEXT,
    unsubscribed_at TEXT,
    last_sent       TEXT,
    failed_at       TEXT,
    failure         TEXT NOT NULL DEFAULT '',
    UNIQUE (member_id, address)
);

-- One message to one address: an event, a day's digest, or a confirmation.
CREATE TABLE notice_messages (
    id           INTEGER PRIMARY KEY,
    address_id   INTEGER NOT NULL REFERENCES notice_addresses(id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,
    day          TEXT NOT NULL,
    state        TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_attempt TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_attempt TEXT,
    last_error   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX notice_messages_due ON notice_messages(next_attempt, id) WHERE state = 'pending';
CREATE INDEX notice_messages_day ON notice_messages(address_id, day, kind);
CREATE UNIQUE INDEX notice_messages_digest ON notice_messages(address_id, day) WHERE kind = 'digest';

-- The events a message tells: one, or a digest's.
CREATE TABLE notice_events (
    id         INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES notice_messages(id) ON DELETE CASCADE,
    type       TEXT NOT NULL,
    data       TEXT NOT NULL,
    at         TEXT NOT NULL
);
CREATE INDEX notice_events_message ON notice_events(message_id, id);
