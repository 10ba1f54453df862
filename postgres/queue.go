package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
)

// The one job queue (package queue). FOR UPDATE SKIP LOCKED lets instances
// claim at once without taking one job twice.

var _ queue.Store = (*Store)(nil)

// ClaimJobs takes due jobs and holds them for the lease. The condition
// repeated on the row locked makes one another instance claimed meanwhile
// (committed: running now) one this statement skips.
func (s *Store) ClaimJobs(ctx context.Context, c queue.Claim) ([]queue.Job, error) {
	skipS, skipM, served := nonNil(c.SkipSubjects), nonNil(c.SkipMembers), nonNil(c.Served)
	// Round-robin: each subject's oldest due job (subjects found by
	// skipping through jobs_subject_due, an index probe each whatever the
	// backlog), numbered within each member, the first of each taken;
	// served is the member's place in c.Served (0: not listed, first).
	due := `SELECT j.id, j.member_id, j.subject_id, j.run_after FROM jobs j
		WHERE j.state = 'pending' AND j.run_after <= $1 AND j.kind = ANY($4::text[])`
	if c.RoundRobin {
		due = `WITH RECURSIVE subjects(id) AS (
				SELECT (SELECT min(subject_id) FROM jobs WHERE state = 'pending')
				UNION ALL
				SELECT (SELECT min(subject_id) FROM jobs WHERE state = 'pending' AND subject_id > subjects.id)
				FROM subjects WHERE subjects.id IS NOT NULL)
			SELECT h.id, h.member_id, h.subject_id, h.run_after FROM subjects s
			CROSS JOIN LATERAL (SELECT j.id, j.member_id, j.subject_id, j.run_after FROM jobs j
				WHERE j.subject_id = s.id AND j.state = 'pending' AND j.run_after <= $1 AND j.kind = ANY($4::text[])
				ORDER BY j.run_after, j.id LIMIT 1) h
			WHERE s.id IS NOT NULL`
	}
	var jobs []queue.Job
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE jobs SET state = 'pending', lease_owner = '', lease_until = NULL
			WHERE state = 'running' AND lease_until <= $1`, c.At); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `WITH due AS (`+due+`),
			ranked AS (
				SELECT id, run_after, row_number() OVER (PARTITION BY member_id ORDER BY run_after, id) AS rn,
					COALESCE(array_position($7::bigint[], member_id), 0) AS served
				FROM due WHERE subject_id <> ALL($5::bigint[]) AND member_id <> ALL($6::bigint[])),
			pick AS (
				SELECT j.id FROM jobs j JOIN ranked r ON r.id = j.id
				WHERE j.state = 'pending' AND j.run_after <= $1 AND (NOT $8 OR r.rn = 1)
				ORDER BY r.rn, r.served, r.run_after, r.id LIMIT $3 FOR UPDATE OF j SKIP LOCKED)
			UPDATE jobs SET state = 'running', lease_until = $2, lease_owner = $9, unique_key = NULL
			FROM pick WHERE jobs.id = pick.id
			RETURNING jobs.id, jobs.kind, jobs.member_id, jobs.subject_id, '', jobs.payload, jobs.state, jobs.attempts,
				jobs.run_after, jobs.lease_owner, jobs.lease_until, jobs.created_at, jobs.last_attempt, jobs.last_error, jobs.result`,
			c.At, c.At.Add(c.Lease), c.Limit, c.Kinds, skipS, skipM, served, c.RoundRobin, c.Owner)
		var err error
		jobs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.Job, error) { return storekit.ScanJob(row) })
		return err
	})
	slices.SortFunc(jobs, func(a, b queue.Job) int { return cmp.Compare(a.ID, b.ID) }) // RETURNING's order is none
	return jobs, s.wrap("claim jobs", err)
}

// FinishJob records an attempt's outcome.
func (s *Store) FinishJob(ctx context.Context, o queue.Outcome) error {
	next := o.RunAfter
	if next.IsZero() {
		next = o.At
	}
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET state = $1, attempts = attempts + 1, run_after = $2,
		lease_owner = '', lease_until = NULL, last_attempt = $3, last_error = $4, result = COALESCE($5, result)
		WHERE id = $6 AND state = 'running' AND lease_owner = $7`, o.State, next, o.At, o.Error, o.Result, o.JobID, o.Owner)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("%w: job %d is no longer held by %s", certorder.ErrConflict, o.JobID, o.Owner)
	}
	return s.wrap("finish job", err)
}
