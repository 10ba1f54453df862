package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
)

// The one job queue (package queue). SQLite has one writer, and its
// transactions begin IMMEDIATE, so a claim's UPDATE alone keeps two workers
// from taking one job.

var _ queue.Store = (*Store)(nil)

// ClaimJobs takes due jobs and holds them for the lease.
func (s *Store) ClaimJobs(ctx context.Context, c queue.Claim) ([]queue.Job, error) {
	kinds, _ := json.Marshal(c.Kinds) // strings always marshal
	skipS, skipM, served := int64List(c.SkipSubjects), int64List(c.SkipMembers), int64List(c.Served)
	// Round-robin: each subject's oldest due job (subjects found by
	// skipping through jobs_subject_due, an index probe each whatever the
	// backlog), numbered within each member, the first of each taken;
	// served is the member's place in c.Served (0: not listed, first).
	due := `SELECT j.id, j.member_id, j.subject_id, j.run_after FROM jobs j
		WHERE j.state = 'pending' AND j.run_after <= ?2 AND j.kind IN (SELECT value FROM json_each(?5))`
	if c.RoundRobin {
		due = `WITH RECURSIVE subjects(id) AS (
				SELECT (SELECT min(subject_id) FROM jobs WHERE state = 'pending')
				UNION ALL
				SELECT (SELECT min(subject_id) FROM jobs WHERE state = 'pending' AND subject_id > subjects.id)
				FROM subjects WHERE subjects.id IS NOT NULL)
			SELECT j.id, j.member_id, j.subject_id, j.run_after FROM subjects s JOIN jobs j ON j.id = (SELECT h.id FROM jobs h
				WHERE h.subject_id = s.id AND h.state = 'pending' AND h.run_after <= ?2
				AND h.kind IN (SELECT value FROM json_each(?5)) ORDER BY h.run_after, h.id LIMIT 1)
			WHERE s.id IS NOT NULL`
	}
	var jobs []queue.Job
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'pending', lease_owner = '', lease_until = NULL
			WHERE state = 'running' AND lease_until <= ?`, formatTime(c.At)); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET state = 'running', lease_until = ?1, lease_owner = ?3, unique_key = NULL
			WHERE id IN (SELECT id FROM (
				SELECT d.id, d.run_after, row_number() OVER (PARTITION BY d.member_id ORDER BY d.run_after, d.id) AS rn,
					COALESCE((SELECT v.key + 1 FROM json_each(?8) v WHERE v.value = d.member_id), 0) AS served
				FROM (`+due+`) d
				WHERE d.subject_id NOT IN (SELECT value FROM json_each(?6)) AND d.member_id NOT IN (SELECT value FROM json_each(?7)))
				WHERE ?9 = 0 OR rn = 1 ORDER BY rn, served, run_after, id LIMIT ?4)
			RETURNING `+storekit.JobColumns, formatTime(c.At.Add(c.Lease)), formatTime(c.At), c.Owner, c.Limit, string(kinds),
			skipS, skipM, served, c.RoundRobin)
		if err != nil {
			return err
		}
		defer rows.Close()
		jobs, err = storekit.Collect(rows, storekit.ScanJob)
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
	res, err := s.write.ExecContext(ctx, `UPDATE jobs SET state = ?, attempts = attempts + 1, run_after = ?,
		lease_owner = '', lease_until = NULL,
		last_attempt = ?, last_error = ?, result = COALESCE(?, result) WHERE id = ? AND state = 'running' AND lease_owner = ?`,
		o.State, formatTime(next), formatTime(o.At), o.Error, nullBytes(o.Result), o.JobID, o.Owner)
	if err = oneRow(res, err, fmt.Sprintf("job %d", o.JobID)); errors.Is(err, certorder.ErrNotFound) {
		err = fmt.Errorf("%w: job %d is no longer held by %s", certorder.ErrConflict, o.JobID, o.Owner)
	}
	return s.wrap("finish job", err)
}

func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
