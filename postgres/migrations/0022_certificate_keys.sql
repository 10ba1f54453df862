-- One index a look-up key, by key then member, instead of two (by key, and
-- by member and key): the member's look-up (CertificateCheck) seeks
-- (key, member) in it, landing on its own entries without visiting another
-- member's (issue 46's guarantee, kept), and the operator's look-up across
-- members (admin order find) seeks the key alone, its prefix. Each history
-- entry then writes two index entries fewer (issue 44; docs/PERFORMANCE.md).
DROP INDEX order_certificates_serial;
DROP INDEX order_certificates_thumbprint;
DROP INDEX order_certificates_member_serial;
DROP INDEX order_certificates_member_thumbprint;
CREATE INDEX order_certificates_serial ON order_certificates(serial_key, member_id) WHERE serial_key <> '';
CREATE INDEX order_certificates_thumbprint ON order_certificates(thumbprint_key, member_id) WHERE thumbprint_key <> '';
