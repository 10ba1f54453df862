-- E-mail notices (docs/OPERATIONS.md, "E-mail notices"): members' addresses,
-- and the outbox of messages to them, fed from the order events of
-- webhook_events (noticed: queued for the addresses already). Webhook
-- endpoints get a format: the signed Standard Webhooks payload or a chat
-- room's readable line (Slack's incoming-webhook JSON).
ALTER TABLE webhook_endpoints ADD COLUMN format TEXT NOT NULL DEFAULT 'standard';

-- The events before this version are nobody's notices.
ALTER TABLE webhook_events ADD COLUMN noticed BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE webhook_events ALTER COLUMN noticed SET DEFAULT false;
CREATE INDEX webhook_events_unnoticed ON webhook_events(id) WHERE NOT noticed;

CREATE TABLE notice_addresses (
    id              BIGSERIAL PRIMARY KEY,
    member_id       BIGINT NOT NULL REFERENCES members(id),
    address         TEXT NOT NULL,
    lang            TEXT NOT NULL,
    event_types     TEXT NOT NULL DEFAULT '',
    secret          TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    confirmed_at    TIMESTAMPTZ,
    unsubscribed_at TIMESTAMPTZ,
    last_sent       TIMESTAMPTZ,
    failed_at       TIMESTAMPTZ,
    failure         TEXT NOT NULL DEFAULT '',
    UNIQUE (member_id, address)
);

-- One message to one address: an event, a day's digest, or a confirmation.
CREATE TABLE notice_messages (
    id           BIGSERIAL PRIMARY KEY,
    address_id   BIGINT NOT NULL REFERENCES notice_addresses(id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,
    day          TEXT NOT NULL,
    state        TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_attempt TIMESTAMPTZ NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    last_attempt TIMESTAMPTZ,
    last_error   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX notice_messages_due ON notice_messages(next_attempt, id) WHERE state = 'pending';
CREATE INDEX notice_messages_day ON notice_messages(address_id, day, kind);
CREATE UNIQUE INDEX notice_messages_digest ON notice_messages(address_id, day) WHERE kind = 'digest';

-- The events a message tells: one, or a digest's.
CREATE TABLE notice_events (
    id         BIGSERIAL PRIMARY KEY,
    message_id BIGINT NOT NULL REFERENCES notice_messages(id) ON DELETE CASCADE,
    type       TEXT NOT NULL,
    data       TEXT NOT NULL,
    at         TIMESTAMPTZ NOT NULL
);
CREATE INDEX notice_events_message ON notice_events(message_id, id);
