-- names: the common name and DNS names, lower case, one a line, for the
-- web page's search (certorder.Order.SearchText). doc_format: the layout of
-- doc and cert_end (certorder.DocFormat), so that a change can migrate rows.
ALTER TABLE orders ADD COLUMN names TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN doc_format INTEGER NOT NULL DEFAULT 1;
UPDATE orders SET names = lower(common_name || COALESCE(
    (SELECT E'\n' || string_agg(n, E'\n')
     FROM json_array_elements_text(
         CASE WHEN json_typeof(convert_from(doc, 'UTF8')::json #> '{certificate,dns_names}') = 'array'
              THEN convert_from(doc, 'UTF8')::json #> '{certificate,dns_names}' ELSE '[]'::json END) AS n), ''));
CREATE INDEX orders_member_valid_till ON orders(member_id, valid_till, id);
-- Disabling a member now ends its sessions; end those of members disabled before.
DELETE FROM sessions WHERE member_id IN (SELECT id FROM members WHERE disabled);
