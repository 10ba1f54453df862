-- order.renewed and order.status_changed are made by certorder itself
-- (certorder.OrderChange.Events) and written by the import, order renew and
-- the sync in the transaction of the change; the triggers of 0006 go.
DROP TRIGGER orders_renewed_event;
DROP TRIGGER orders_status_event;
