package runner

import "context"

// failFastHold is a place in the fail-fast window (see failFast) while
// it is armed; giving it back judges the attempt, which may stop the run.
type failFastHold struct{ r *run }

func (f *failFastHold) acquire(ctx context.Context) (func(attemptOutcome), error) {
	held, ok := f.r.ff.acquire(ctx)
	if !ok {
		return nil, stopPending
	}
	if !held {
		return nil, nil
	}
	return func(o attemptOutcome) {
		if err := f.r.ff.judge(o); err != nil {
			f.r.abortRun(err)
		}
	}, nil
}
