-- order.renewed and order.status_changed are made by certorder itself
-- (certorder.OrderChange.Events) and written by the import, order renew and
-- the sync in the transaction of the change; the trigger of 0009 goes.
DROP TRIGGER orders_events ON orders;
DROP FUNCTION certorder_order_events();
