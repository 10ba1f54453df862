-- An order is a plan that holds several certificates (issue 33).
-- valid_from: the current certificate's start (its lifetime sets the reissue
-- window); plan_till: order_valid_till, the plan's end. Both as the document
-- has them, '' when it does not.
ALTER TABLE orders ADD COLUMN valid_from TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN plan_till TEXT NOT NULL DEFAULT '';
UPDATE orders SET
    valid_from = COALESCE(json_extract(CAST(doc AS TEXT), '$.certificate.valid_from'), ''),
    plan_till = COALESCE(json_extract(CAST(doc AS TEXT), '$.order_valid_till'), '');
CREATE INDEX orders_valid_till ON orders(valid_till);
CREATE INDEX orders_plan_till ON orders(plan_till);

-- Every certificate an order has had, oldest first (seq), as CertCentral gave
-- it (certorder.Certificate; dns_names a JSON array). serial_key and
-- thumbprint_key are the look-up forms (certorder.SerialKey, HexKey).
CREATE TABLE order_certificates (
    seq            INTEGER PRIMARY KEY,
    order_id       INTEGER NOT NULL,
    cert_id        INTEGER NOT NULL,
    serial_number  TEXT NOT NULL,
    thumbprint     TEXT NOT NULL,
    common_name    TEXT NOT NULL,
    dns_names      TEXT NOT NULL,
    status         TEXT NOT NULL,
    date_issued    TEXT NOT NULL,
    valid_from     TEXT NOT NULL,
    valid_till     TEXT NOT NULL,
    serial_key     TEXT NOT NULL,
    thumbprint_key TEXT NOT NULL,
    recorded_at    TEXT NOT NULL
);
CREATE INDEX order_certificates_order ON order_certificates(order_id, seq);
CREATE INDEX order_certificates_serial ON order_certificates(serial_key) WHERE serial_key <> '';
CREATE INDEX order_certificates_thumbprint ON order_certificates(thumbprint_key) WHERE thumbprint_key <> '';

-- The stored orders' current certificates start their histories.
INSERT INTO order_certificates (order_id, cert_id, serial_number, thumbprint, common_name, dns_names, status,
    date_issued, valid_from, valid_till, serial_key, thumbprint_key, recorded_at)
SELECT id, cert_id, serial, thumb, common_name, dns_names, status, date_issued, valid_from, valid_till,
    ltrim(lower(replace(replace(serial, ':', ''), ' ', '')), '0'), lower(replace(replace(thumb, ':', ''), ' ', '')),
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM (SELECT o.id,
        COALESCE(json_extract(d, '$.certificate.id'), 0) AS cert_id,
        COALESCE(json_extract(d, '$.certificate.serial_number'), '') AS serial,
        COALESCE(json_extract(d, '$.certificate.thumbprint'), '') AS thumb,
        COALESCE(json_extract(d, '$.certificate.common_name'), '') AS common_name,
        COALESCE(json_extract(d, '$.certificate.dns_names'), '[]') AS dns_names,
        COALESCE(json_extract(d, '$.certificate.status'), '') AS status,
        COALESCE(json_extract(d, '$.certificate.date_issued'), '') AS date_issued,
        COALESCE(json_extract(d, '$.certificate.valid_from'), '') AS valid_from,
        COALESCE(json_extract(d, '$.certificate.valid_till'), '') AS valid_till
      FROM (SELECT id, CAST(doc AS TEXT) AS d FROM orders) o ORDER BY o.id)
WHERE cert_id <> 0 OR serial <> '';

-- The thresholds told of order.expiring and order.plan_ending, per end: a
-- reissued certificate's new end is told afresh.
CREATE TABLE order_notices (
    order_id  INTEGER NOT NULL,
    type      TEXT NOT NULL,
    ends      TEXT NOT NULL,
    threshold INTEGER NOT NULL,
    PRIMARY KEY (order_id, type, ends, threshold)
);
INSERT INTO order_notices (order_id, type, ends, threshold)
SELECT n.order_id, 'order.expiring', o.valid_till, n.threshold FROM expiry_notices n JOIN orders o ON o.id = n.order_id;
DROP TABLE expiry_notices;
