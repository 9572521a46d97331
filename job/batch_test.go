package job

import (
	"errors"
	"testing"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/report"
)

func TestPendingIsAnError(t *testing.T) {
	abort := &ending.AbortError{Cause: errors.New("bad key")}
	tests := map[string]struct {
		sum         *report.Summary
		err         error
		wantPending bool
		wantErr     error
	}{
		"all done":                {sum: &report.Summary{Requests: 3, Succeeded: 3}},
		"never started":           {err: abort, wantErr: abort},
		"pending, nothing else":   {sum: &report.Summary{Requests: 3, Succeeded: 1, Pending: 2}, wantPending: true},
		"pending and some failed": {sum: &report.Summary{Requests: 3, Failed: 1, Pending: 2}, err: ending.ErrFailures, wantPending: true},
		"pending after an abort":  {sum: &report.Summary{Requests: 3, Pending: 3}, err: abort, wantErr: abort},
		"failed, none pending":    {sum: &report.Summary{Requests: 3, Failed: 3}, err: ending.ErrFailures, wantErr: ending.ErrFailures},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := pendingIsAnError(tt.sum, tt.err)
			var pe *ending.PendingError
			if tt.wantPending {
				if !errors.As(err, &pe) || pe.Pending != tt.sum.Pending {
					t.Fatalf("err = %v, want a PendingError for %d", err, tt.sum.Pending)
				}
				return
			}
			if err != tt.wantErr {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
