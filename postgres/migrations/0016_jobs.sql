-- The one job queue (package queue): webhook deliveries and e-mail notices
-- become jobs of one table, claimed, finished, retried and pruned by one
-- piece of SQL. What was queued is carried over: the deliveries keep their
-- IDs, the notices follow them; a notice's events point at its job.
CREATE TABLE jobs (
    id           BIGSERIAL PRIMARY KEY,
    kind         TEXT NOT NULL,
    member_id    BIGINT NOT NULL DEFAULT 0,
    subject_id   BIGINT NOT NULL DEFAULT 0,
    unique_key   TEXT,
    payload      BYTEA NOT NULL,
    state        TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    run_after    TIMESTAMPTZ NOT NULL,
    lease_owner  TEXT NOT NULL DEFAULT '',
    lease_until  TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL,
    last_attempt TIMESTAMPTZ,
    last_error   TEXT NOT NULL DEFAULT '',
    result       BYTEA
);
-- Claims: due jobs of some kinds, oldest first; or, taking members in
-- turn, each subject's oldest due job (an index probe a subject, whatever
-- the backlog). A running job's lease ends at lease_until; then it is
-- pending again (its worker crashed or hung).
CREATE INDEX jobs_due ON jobs(kind, run_after, id) WHERE state = 'pending';
CREATE INDEX jobs_subject_due ON jobs(subject_id, run_after, id) WHERE state = 'pending';
CREATE INDEX jobs_leases ON jobs(lease_until) WHERE state = 'running';
CREATE INDEX jobs_subject ON jobs(subject_id, kind, id);
CREATE INDEX jobs_finished ON jobs(created_at) WHERE state IN ('done', 'failed');
CREATE UNIQUE INDEX jobs_key ON jobs(kind, unique_key) WHERE state = 'pending' AND unique_key IS NOT NULL;

INSERT INTO jobs (id, kind, member_id, subject_id, payload, state, attempts, run_after, created_at, last_attempt, last_error, result)
SELECT d.id, 'webhook', e.member_id, d.endpoint_id,
       convert_to(json_build_object('event_type', d.event_type, 'msg_id', d.msg_id, 'body', convert_from(d.body, 'UTF8'))::text, 'UTF8'),
       CASE d.state WHEN 'delivered' THEN 'done' ELSE d.state END, d.attempts, d.next_attempt, d.created_at,
       d.last_attempt, d.last_error,
       CASE WHEN d.last_attempt IS NULL THEN NULL
            ELSE convert_to(json_build_object('status', d.last_status, 'class', d.last_class, 'latency_us', d.last_latency_us)::text, 'UTF8') END
FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id;

CREATE TEMPORARY TABLE job_offset ON COMMIT DROP AS SELECT COALESCE(MAX(id), 0) AS n FROM jobs;

INSERT INTO jobs (id, kind, member_id, subject_id, unique_key, payload, state, attempts, run_after, created_at, last_attempt, last_error)
SELECT n.id + (SELECT o.n FROM job_offset o), 'notice.' || n.kind, a.member_id, n.address_id,
       CASE WHEN n.kind = 'digest' AND n.state = 'pending' THEN n.address_id || '/' || n.day END,
       ''::bytea,
       CASE n.state WHEN 'delivered' THEN 'done' ELSE n.state END, n.attempts, n.next_attempt, n.created_at,
       n.last_attempt, n.last_error
FROM notice_messages n JOIN notice_addresses a ON a.id = n.address_id;

SELECT setval(pg_get_serial_sequence('jobs', 'id'), (SELECT COALESCE(MAX(id), 0) + 1 FROM jobs), false);

-- The events a notice tells: one, or a digest's.
ALTER TABLE notice_events DROP CONSTRAINT notice_events_message_id_fkey;
UPDATE notice_events SET message_id = message_id + (SELECT o.n FROM job_offset o);
ALTER TABLE notice_events RENAME COLUMN message_id TO job_id;
ALTER TABLE notice_events ADD FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE CASCADE;
ALTER INDEX notice_events_message RENAME TO notice_events_job;

DROP TABLE notice_messages;
DROP TABLE webhook_deliveries;
