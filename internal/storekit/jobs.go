package storekit

import (
	"context"
	"fmt"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/queue"
)

// The queue's statements both stores make alike (enqueue, retry, list,
// prune); the claim, the finish and what takes events for the queue are
// each store's (SKIP LOCKED on
// PostgreSQL, the one writer on SQLite).

// JobColumns are the columns ScanJob reads.
const JobColumns = `id, kind, member_id, subject_id, COALESCE(unique_key, ''), payload, state, attempts, run_after,
	lease_owner, lease_until, created_at, last_attempt, last_error, result`

// ScanJob scans JobColumns.
func ScanJob(row Row) (queue.Job, error) {
	var j queue.Job
	var runAfter, lease, created, last Time
	err := row.Scan(&j.ID, &j.Kind, &j.MemberID, &j.SubjectID, &j.Key, &j.Payload, &j.State, &j.Attempts, &runAfter,
		&j.Owner, &lease, &created, &last, &j.LastError, &j.Result)
	j.RunAfter, j.LeaseUntil, j.CreatedAt, j.LastAttempt = runAfter.T, lease.T, created.T, last.T
	return j, err
}

// Enqueue adds jobs.
func (k *Kit) Enqueue(ctx context.Context, jobs ...queue.Job) ([]int64, error) {
	ids := make([]int64, 0, len(jobs))
	err := k.Write.InTx(ctx, func(tx DB) error {
		ids = ids[:0]
		at := time.Now()
		for _, j := range jobs {
			id, err := InsertJob(ctx, tx, j, at)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	return ids, k.Wrap("enqueue", err)
}

// InsertJob adds a job in the transaction of the change that causes it,
// created at at and due at its RunAfter (zero: at); one with a Key joins
// the pending job of its kind with that key, whose ID it returns.
func InsertJob(ctx context.Context, tx DB, j queue.Job, at time.Time) (int64, error) {
	if j.RunAfter.IsZero() {
		j.RunAfter = at
	}
	if j.Payload == nil {
		j.Payload = []byte{}
	}
	var key any
	if j.Key != "" {
		key = j.Key
	}
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO jobs (kind, member_id, subject_id, unique_key, payload, state, run_after, created_at)
		VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)
		ON CONFLICT (kind, unique_key) WHERE state = 'pending' AND unique_key IS NOT NULL DO UPDATE SET kind = excluded.kind
		RETURNING id`, j.Kind, j.MemberID, j.SubjectID, key, j.Payload, j.RunAfter, at).Scan(&id)
	return id, err
}

// DeleteJobs deletes the jobs of kinds of a subject that is deleted, in
// its transaction tx.
func (k *Kit) DeleteJobs(ctx context.Context, tx DB, subjectID int64, kinds ...string) error {
	_, err := tx.Exec(ctx, `DELETE FROM jobs WHERE subject_id = ? AND `+k.InList("kind"), subjectID, k.List(kinds))
	return err
}

// RetryJob makes a finished job of kind, the member and the subject
// pending again at once (redelivery from the page): ErrNotFound for
// another's or none, ErrConflict for one pending or running.
func (k *Kit) RetryJob(ctx context.Context, kind string, memberID, subjectID, id int64) error {
	return k.Wrap("retry job", k.Write.InTx(ctx, func(tx DB) error {
		var state string
		err := tx.QueryRow(ctx, `SELECT state FROM jobs WHERE id = ? AND kind = ? AND member_id = ? AND subject_id = ?`+k.ForUpdate,
			id, kind, memberID, subjectID).Scan(&state)
		switch {
		case err != nil:
			return notFound(err, fmt.Sprintf("job %d", id))
		case state == queue.Pending || state == queue.Running:
			return fmt.Errorf("%w: job %d is %s already", certorder.ErrConflict, id, state)
		}
		_, err = tx.Exec(ctx, `UPDATE jobs SET state = 'pending', attempts = 0, run_after = ? WHERE id = ?`, time.Now(), id)
		return err
	}))
}

// Jobs lists jobs of a kind, a member and a subject, newest first.
func (k *Kit) Jobs(ctx context.Context, l queue.List) ([]queue.Job, error) {
	jobs, err := Query(ctx, k.Read, ScanJob, `SELECT `+JobColumns+` FROM jobs
		WHERE subject_id = ? AND kind = ? AND member_id = ? ORDER BY id DESC LIMIT ?`, l.SubjectID, l.Kind, l.MemberID, l.Limit)
	return jobs, k.Wrap("list jobs", err)
}

// PruneJobs deletes the jobs of kinds finished before before.
func (k *Kit) PruneJobs(ctx context.Context, kinds []string, before time.Time) error {
	_, err := k.Write.Exec(ctx, `DELETE FROM jobs WHERE state IN ('done', 'failed') AND created_at < ? AND `+k.InList("kind"),
		before, k.List(kinds))
	return k.Wrap("prune jobs", err)
}
