package redisbudget

import (
	"context"
	"testing"

	"github.com/llmrun/llmrun/limiter"
)

// TestSharedNoRatesFrom429sUnderGivenLimits: as in package limiter, a
// 429 under limits the user gave cuts no shared rate, whether it carried
// headers or not; on a key nothing describes, a 429 naming tokens learns a
// token rate and no request rate.
func TestSharedNoRatesFrom429sUnderGivenLimits(t *testing.T) {
	ctx := context.Background()
	cost := limiter.Cost{Requests: 1, Input: 100}
	for _, tt := range []struct {
		name     string
		lim      limiter.Limits
		r        limiter.Refusal
		rpm, tpm bool
	}{
		{"given, bare", limiter.Limits{RPM: 600, ITPM: 60000, Concurrency: 8}, limiter.Refusal{Dimension: limiter.DimRequests}, false, false},
		{"given, headers", limiter.Limits{RPM: 600, Concurrency: 8}, limiter.Refusal{Described: true, Dimension: limiter.DimRequests}, false, false},
		{"auto, the 429 has headers", limiter.Limits{Auto: true, Concurrency: 8}, limiter.Refusal{Described: true}, false, false},
		{"auto, names tokens", limiter.Limits{Auto: true, Concurrency: 8}, limiter.Refusal{Dimension: limiter.DimTokens}, false, true},
		{"auto, names requests", limiter.Limits{Auto: true, Concurrency: 8}, limiter.Refusal{Dimension: limiter.DimRequests}, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBudget(t, tt.lim)
			key := testKey(t)
			for range 10 {
				tk, err := b.Reserve(ctx, key, cost)
				if err != nil {
					t.Fatal(err)
				}
				tk.Settle(cost)
			}
			tk, err := b.Reserve(ctx, key, cost)
			if err != nil {
				t.Fatal(err)
			}
			tk.Refused(tt.r)
			s := b.Stats()[0]
			if (s.RefusalRPM > 0) != tt.rpm || (s.RefusalTPM > 0) != tt.tpm {
				t.Errorf("rates from 429s: %v rpm, %v tpm; want rpm %v, tpm %v", s.RefusalRPM, s.RefusalTPM, tt.rpm, tt.tpm)
			}
			if tt.lim.RPM > 0 && s.Effective.RPM != tt.lim.RPM {
				t.Errorf("effective RPM %v, want the given %v", s.Effective.RPM, tt.lim.RPM)
			}
		})
	}
}
