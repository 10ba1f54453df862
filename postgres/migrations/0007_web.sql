-- self_service_keys_off: the operator turned the member's self-service
-- keys on the web page off (admin member keys NAME off).
ALTER TABLE members ADD COLUMN self_service_keys_off BOOLEAN NOT NULL DEFAULT false;
-- Disabling a member deletes its sessions by member.
CREATE INDEX sessions_member ON sessions(member_id);
-- The web page lists a member's current orders (renewed ones hidden) by
-- number or by expiry, and counts them: partial indexes serve both, with
-- good plans even before ANALYZE has seen a large import. Which order an
-- order renewed is read by renewed_by within the member.
CREATE INDEX orders_member_current ON orders(member_id, id) WHERE renewed_by IS NULL;
CREATE INDEX orders_member_current_till ON orders(member_id, valid_till, id) WHERE renewed_by IS NULL;
CREATE INDEX orders_renewed_by_member ON orders(renewed_by, member_id);
DROP INDEX orders_renewed_by;
