-- The confirmation budget (docs/OPERATIONS.md, "E-mail notices"): every
-- confirmation sent to an address nobody had confirmed, recorded apart
-- from the address, so that removing and adding it again forgets nothing;
-- counted by recipient (certorder.NoticeRecipient: lower case, no +tag) and
-- by member. The secret is the address's, kept to check the block link of
-- the message after the address is gone. And the recipients who refused
-- certorder's messages with that link.
CREATE TABLE notice_confirmations (
    id         INTEGER PRIMARY KEY,
    address_id INTEGER NOT NULL,
    member_id  INTEGER NOT NULL,
    recipient  TEXT NOT NULL,
    address    TEXT NOT NULL,
    secret     TEXT NOT NULL,
    sent_at    TEXT NOT NULL
);
CREATE INDEX notice_confirmations_address ON notice_confirmations(address_id);
CREATE INDEX notice_confirmations_recipient ON notice_confirmations(recipient, sent_at);
CREATE INDEX notice_confirmations_member ON notice_confirmations(member_id, sent_at);

CREATE TABLE notice_blocks (
    recipient  TEXT PRIMARY KEY,
    blocked_at TEXT NOT NULL
);

-- What a member is told of an address's last permanent failure (a kind:
-- recipient, message, service; the relay's words stay the operator's, in
-- failure), and the last temporary failure with when it is tried again,
-- for the operator (admin notice list).
ALTER TABLE notice_addresses ADD COLUMN failure_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE notice_addresses ADD COLUMN retry_failed_at TEXT;
ALTER TABLE notice_addresses ADD COLUMN retry_failure TEXT NOT NULL DEFAULT '';
ALTER TABLE notice_addresses ADD COLUMN retry_at TEXT;
-- A relay that quoted the AUTH line in its refusal put the credentials in
-- base64 into these texts: they are not kept.
UPDATE notice_addresses SET failure = 'a failure before this version (its text is not kept)'
    WHERE failure LIKE '%AUTH%' OR failure LIKE '%535%' OR failure LIKE '%authenticat%';
UPDATE jobs SET last_error = 'a failure before this version (its text is not kept)'
    WHERE kind LIKE 'notice.%' AND (last_error LIKE '%AUTH%' OR last_error LIKE '%535%' OR last_error LIKE '%authenticat%');
