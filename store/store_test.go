package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lib/pq"
)

func TestRetryable(t *testing.T) {
	for err, want := range map[error]bool{
		&pq.Error{Code: "40P01", Message: "deadlock detected"}:                                      true,
		&pq.Error{Code: "40001", Message: "could not serialize access"}:                             true,
		fmt.Errorf("dropping: %w", &pq.Error{Code: "XX000", Message: "tuple concurrently updated"}): true,
		&pq.Error{Code: "XX000", Message: "cache lookup failed for relation 1"}:                     false,
		&pq.Error{Code: "23505", Message: "duplicate key value"}:                                    false,
		errors.New("tuple concurrently updated"):                                                    false,
	} {
		if got := retryable(err); got != want {
			t.Errorf("%v: %v, want %v", err, got, want)
		}
	}
}
