package runner

import (
	"context"
	"time"
)

// Sleep waits d unless ctx ends first, and says whether it waited: the
// batch-API route (package offline) paces its polls the same way the run
// backs off.
func Sleep(ctx context.Context, d time.Duration) bool { return sleep(ctx, d) }
