//go:build cgo && !linux

package sqlitedb

import (
	"context"
	"errors"
	"time"
)

// processQueue is Linux's only (open-file-description locks and futexes):
// elsewhere the writers of several processes poll for SQLite's lock.
type processQueue struct{}

var errQueueUnavailable = errors.New("no queue across processes on this system (Linux only); writers poll for the lock")

// errQueueRemote: elsewhere than Linux, there is no queue to say more of.
var errQueueRemote = errQueueUnavailable

// errQueueOff: a queue that was on turned off; there is none to.
var errQueueOff = errQueueUnavailable

const queueLockWait = 0

func openProcessQueue(context.Context, string, time.Duration) (*processQueue, error) {
	return nil, errQueueUnavailable
}

func (*processQueue) take(time.Duration) (int64, error) { return 0, errQueueUnavailable }
func (*processQueue) wait(int64, time.Time, <-chan struct{}) (bool, error) {
	return false, errQueueUnavailable
}
func (*processQueue) waitingAfter(int64) bool { return false }
func (*processQueue) replaced() bool          { return false }
func (*processQueue) release(int64)           {}
func (*processQueue) close()                  {}
