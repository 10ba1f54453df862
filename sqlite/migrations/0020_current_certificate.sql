-- An order's current certificate is its document's alone (issue 44): the
-- history keeps the certificates it replaced, the order's row the current
-- one's look-up keys, each in an index by key then member as the
-- history's (CertificateCheck seeks (key, member), admin order find the
-- key). A new order writes no history entry: importing 200,000 orders
-- wrote some 16,000 pages fewer (docs/PERFORMANCE.md).
ALTER TABLE orders ADD COLUMN serial_key TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN thumbprint_key TEXT NOT NULL DEFAULT '';
-- Each order's current certificate is its history's newest entry recorded
-- from the document's certificate (the same ID and serial number): its keys
-- go to the order, and the entry leaves the history. Keyed by order, so
-- that the UPDATE finds an order's entry at once.
CREATE TEMP TABLE current_entries (order_id INTEGER PRIMARY KEY, seq INTEGER NOT NULL);
INSERT INTO current_entries (order_id, seq)
SELECT c.order_id, max(c.seq)
FROM order_certificates c JOIN orders o ON o.id = c.order_id
WHERE c.cert_id = COALESCE(json_extract(CAST(o.doc AS TEXT), '$.certificate.id'), 0)
    AND c.serial_number = COALESCE(json_extract(CAST(o.doc AS TEXT), '$.certificate.serial_number'), '')
GROUP BY c.order_id;
UPDATE orders SET serial_key = c.serial_key, thumbprint_key = c.thumbprint_key
FROM current_entries e JOIN order_certificates c ON c.seq = e.seq
WHERE e.order_id = orders.id;
DELETE FROM order_certificates WHERE seq IN (SELECT seq FROM current_entries);
DROP TABLE current_entries;
CREATE INDEX orders_serial_key ON orders(serial_key, member_id) WHERE serial_key <> '';
CREATE INDEX orders_thumbprint_key ON orders(thumbprint_key, member_id) WHERE thumbprint_key <> '';
