-- self_service_keys_off: the operator turned the member's self-service
-- keys on the web page off (admin member keys NAME off).
ALTER TABLE members ADD COLUMN self_service_keys_off INTEGER NOT NULL DEFAULT 0;
-- Web sessions move to a file of their own (sqlite.SessionsPath), so that a
-- sign-in never waits behind an import holding this file's write lock.
-- Sessions open at the upgrade end: members sign in again.
DROP TABLE sessions;
