-- self_service_keys_off: the operator turned the member's self-service
-- keys on the web page off (admin member keys NAME off).
ALTER TABLE members ADD COLUMN self_service_keys_off BOOLEAN NOT NULL DEFAULT false;
-- Disabling a member deletes its sessions by member.
CREATE INDEX sessions_member ON sessions(member_id);
