-- self_service_keys_off: the operator turned the member's self-service
-- keys on the web page off (admin member keys NAME off).
ALTER TABLE members ADD COLUMN self_service_keys_off INTEGER NOT NULL DEFAULT 0;
-- Web sessions move to a file of their own (sqlite.SessionsPath), so that a
-- sign-in never waits behind an import holding this file's write lock.
-- Sessions open at the upgrade end: members sign in again.
DROP TABLE sessions;
-- The web page lists a member's current orders (renewed ones hidden) by
-- number or by expiry, and counts them: partial indexes serve both. Which
-- order an order renewed is read by renewed_by within the member.
CREATE INDEX orders_member_current ON orders(member_id, id) WHERE renewed_by IS NULL;
CREATE INDEX orders_member_current_till ON orders(member_id, valid_till, id) WHERE renewed_by IS NULL;
CREATE INDEX orders_renewed_by_member ON orders(renewed_by, member_id);
DROP INDEX orders_renewed_by;
