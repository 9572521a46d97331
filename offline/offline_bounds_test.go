package offline

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/providers"
)

// failingResults is fakeBatches whose result downloads fail with err.
type failingResults struct {
	*fakeBatches
	err   error
	calls atomic.Int64
}

func (f *failingResults) Results(context.Context, providers.BatchJob, func(providers.BatchResult) error) error {
	f.calls.Add(1)
	return f.err
}

// TestOfflineUndownloadableResultsStop is issue 22 item 10: a result line
// past MaxResultLine, or a results URL refused as off-host, fails the batch
// route once with the cause (exit 3, the batch left open) instead of being
// downloaded again at every poll forever.
func TestOfflineUndownloadableResultsStop(t *testing.T) {
	for _, cause := range []error{
		&providers.Error{Class: providers.ClassTooLarge, Message: "a result line is longer than 64 MiB (MaxResultLine)"},
		&providers.Error{Class: providers.ClassInvalid, Message: "results location https://elsewhere/x is not on http://fake; not sending the API key there"},
	} {
		fx := newOfflineFixture(t, seqIDs(3)...)
		fc := &failingResults{fakeBatches: &fakeBatches{endAfter: 1}, err: cause}
		sum, err, log := fx.run(t, context.Background(), fc.fakeBatches, func(c *OfflineConfig) { c.Client = fc })
		var ae *ending.AbortError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "cannot be collected") || !strings.Contains(err.Error(), cause.Error()) {
			t.Fatalf("err %v, want an abort naming the cause\n%s", err, log)
		}
		if n := fc.calls.Load(); n != 1 || sum.Pending != 3 {
			t.Errorf("%d downloads, %d pending: want 1 and 3", n, sum.Pending)
		}
		if recs := openRecords(t, fx.out); len(recs) != 1 {
			t.Errorf("%d batches recorded open, want 1 (left at the provider)", len(recs))
		}
	}
}
