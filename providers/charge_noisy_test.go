package providers

import (
	"testing"
	"time"
)

// TestChargeLearnerNoisyClock: on a loaded client its own send and receive
// stamps are off by milliseconds, worth more refill than one answer's
// output, so the intervals' votes split between the two rules that do not
// charge max_tokens; the learner still tells within a few dozen readings
// that the cap is not charged (either of the two reserves the expected
// output; split votes settle on the larger), and
// a server that charges the cap is still found.
func TestChargeLearnerNoisyClock(t *testing.T) {
	for _, rule := range []ChargeRule{ChargeInput, ChargeOutput, ChargeCap} {
		for _, reserveCap := range []bool{false, true} {
			for seed := range uint64(8) {
				got, reads := recordPaced(t, rule, 200, 8, 8*time.Millisecond, seed, reserveCap)
				ok := got == rule || rule != ChargeCap && (got == ChargeInput || got == ChargeOutput)
				if !ok || reads > 48 {
					t.Errorf("%v, reserving the cap %v, seed %d: learned %v after %d readings", rule, reserveCap, seed, got, reads)
				}
			}
		}
	}
}
