-- An order's current certificate is its document's alone (issue 44): the
-- history keeps the certificates it replaced, the order's row the current
-- one's look-up keys, each in an index by key then member as the
-- history's (CertificateCheck seeks (key, member), admin order find the
-- key). A new order writes no history entry (docs/PERFORMANCE.md).
ALTER TABLE orders ADD COLUMN serial_key TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN thumbprint_key TEXT NOT NULL DEFAULT '';
-- Each order's current certificate is its history's newest entry recorded
-- from the document's certificate (the same ID and serial number): its keys
-- go to the order, and the entry leaves the history.
CREATE TEMP TABLE current_entries AS
SELECT c.order_id, max(c.seq) AS seq
FROM order_certificates c
JOIN (SELECT id, convert_from(doc, 'UTF8')::json -> 'certificate' AS d FROM orders) o ON o.id = c.order_id
WHERE c.cert_id = COALESCE((o.d ->> 'id')::BIGINT, 0) AND c.serial_number = COALESCE(o.d ->> 'serial_number', '')
GROUP BY c.order_id;
UPDATE orders o SET serial_key = c.serial_key, thumbprint_key = c.thumbprint_key
FROM current_entries e JOIN order_certificates c ON c.seq = e.seq
WHERE e.order_id = o.id;
DELETE FROM order_certificates WHERE seq IN (SELECT seq FROM current_entries);
DROP TABLE current_entries;
CREATE INDEX orders_serial_key ON orders(serial_key, member_id) WHERE serial_key <> '';
CREATE INDEX orders_thumbprint_key ON orders(thumbprint_key, member_id) WHERE thumbprint_key <> '';
