-- The worker takes deliveries round-robin: each endpoint's oldest due
-- delivery, found by this index whatever the backlog.
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries(endpoint_id, next_attempt, id) WHERE state = 'pending';
