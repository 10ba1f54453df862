-- CertificateCheck looks a member's certificate up by (member, key) in one
-- index, so that another member's certificates are never visited: the
-- answer's time says nothing of them (issue 46: a serial on 5,000 of
-- another member's certificates took 12 ms, a missing one 0.9 ms). An
-- entry keeps its order's member, written with it (an order's member never
-- changes); the indexes by key alone stay for the operator's look-ups
-- across members (admin order find).
ALTER TABLE order_certificates ADD COLUMN member_id BIGINT NOT NULL DEFAULT 0;
UPDATE order_certificates c SET member_id = o.member_id FROM orders o WHERE o.id = c.order_id;
CREATE INDEX order_certificates_member_serial ON order_certificates(member_id, serial_key) WHERE serial_key <> '';
CREATE INDEX order_certificates_member_thumbprint ON order_certificates(member_id, thumbprint_key) WHERE thumbprint_key <> '';

-- The cache in front of the store answers CertificateCheck too
-- (internal/credcache): a change to a history notifies the serving
-- instances as a change to orders does (0008_perf).
CREATE TRIGGER order_certificates_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON order_certificates
    FOR EACH STATEMENT EXECUTE FUNCTION certorder_changed();
