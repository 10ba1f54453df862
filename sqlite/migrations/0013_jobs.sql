-- The one job queue (package queue): webhook deliveries and e-mail notices
-- become jobs of one table, claimed, finished, retried and pruned by one
-- piece of SQL. What was queued is carried over: the deliveries keep their
-- IDs, the notices follow them; a notice's events point at its job.
CREATE TABLE jobs (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL,
    member_id    INTEGER NOT NULL DEFAULT 0,
    subject_id   INTEGER NOT NULL DEFAULT 0,
    unique_key   TEXT,
    payload      BLOB NOT NULL,
    state        TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    run_after    TEXT NOT NULL,
    lease_owner  TEXT NOT NULL DEFAULT '',
    lease_until  TEXT,
    created_at   TEXT NOT NULL,
    last_attempt TEXT,
    last_error   TEXT NOT NULL DEFAULT '',
    result       BLOB
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
       json_object('event_type', d.event_type, 'msg_id', d.msg_id, 'body', CAST(d.body AS TEXT)),
       CASE d.state WHEN 'delivered' THEN 'done' ELSE d.state END, d.attempts, d.next_attempt, d.created_at,
       d.last_attempt, d.last_error,
       CASE WHEN d.last_attempt IS NULL THEN NULL
            ELSE json_object('status', d.last_status, 'class', d.last_class, 'latency_us', d.last_latency_us) END
FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id;

CREATE TABLE job_offset AS SELECT COALESCE(MAX(id), 0) AS n FROM jobs;

INSERT INTO jobs (id, kind, member_id, subject_id, unique_key, payload, state, attempts, run_after, created_at, last_attempt, last_error)
SELECT n.id + (SELECT n FROM job_offset), 'notice.' || n.kind, a.member_id, n.address_id,
       CASE WHEN n.kind = 'digest' AND n.state = 'pending' THEN n.address_id || '/' || n.day END,
       X'',
       CASE n.state WHEN 'delivered' THEN 'done' ELSE n.state END, n.attempts, n.next_attempt, n.created_at,
       n.last_attempt, n.last_error
FROM notice_messages n JOIN notice_addresses a ON a.id = n.address_id;

-- The events a notice tells: one, or a digest's.
CREATE TABLE notice_events_new (
    id     INTEGER PRIMARY KEY,
    job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    type   TEXT NOT NULL,
    data   TEXT NOT NULL,
    at     TEXT NOT NULL
);
INSERT INTO notice_events_new (id, job_id, type, data, at)
SELECT id, message_id + (SELECT n FROM job_offset), type, data, at FROM notice_events;

DROP TABLE job_offset;
DROP TABLE notice_events;
DROP TABLE notice_messages;
DROP TABLE webhook_deliveries;
ALTER TABLE notice_events_new RENAME TO notice_events;
CREATE INDEX notice_events_job ON notice_events(job_id, id);
