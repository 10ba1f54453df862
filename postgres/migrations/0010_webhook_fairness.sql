-- The worker takes deliveries round-robin: each endpoint's oldest due
-- delivery, found by this index whatever the backlog (numbering every due
-- delivery instead cost 0.37 s a claim with 200,000 of them; this, 0.3 ms).
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries(endpoint_id, next_attempt, id) WHERE state = 'pending';
