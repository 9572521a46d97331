package limiter

import "time"

// A 429 means two different things. From a server that describes nothing
// (no limits given, no rate-limit headers ever) it is the only evidence of
// a limit, and the AIMD learns rates from it. Where the user gave limits or
// headers describe the key, the limits are known: a 429 then says the
// server's bucket and ours drifted apart (a request counted later than we
// thought, a share used elsewhere), so it calibrates the bucket it names
// and pauses for the retry-after, and cuts no rate. Cutting one there cost
// a whole run 13% for one 429 in the tight scenario (issue 25).

// bare reports whether a 429 comes from a server that describes nothing:
// the key has no limit given and none from headers, and the refusal
// itself carried no rate-limit headers.
func (k *keyState) bare(r Refusal) bool {
	if r.Described || k.learnedAny {
		return false
	}
	for i := range numBuckets {
		if k.described(i) > 0 {
			return false
		}
	}
	return true
}

// calibrate is a described key's answer to a 429 without headers: the
// server's bucket for the dimension it names is empty, so ours is emptied
// too (headers, when the 429 had them, already lowered it). A 429 that
// names nothing empties nothing: the pause for its retry-after and the
// retry's backoff are enough.
// With a retry-after the pause does that already. Without one, a key
// that headers never described is paused for the AIMD's backoff (no rate
// is cut), unless the attempt (its AIMD mark) was admitted before the last
// backoff: it returns the pause, 0 for none.
func (k *keyState) calibrate(r Refusal, mark AIMDMark) time.Duration {
	if r.Described || r.HasRetryAfter {
		return 0
	}
	if i := k.bucketOf(r.Dimension); i >= 0 {
		k.b[i].level = min(k.b[i].level, 0)
	}
	if k.learnedAny {
		return 0
	}
	return k.rc.Backoff(mark)
}

// bucketOf is the key's bucket a refusal's dimension names, -1 for none:
// "tokens" is the combined bucket, or the input one where the limits are
// split (OpenAI's messages say TPM for both).
func (k *keyState) bucketOf(d Dimension) int {
	switch {
	case d < DimRequests || d > DimTokens:
		return -1
	case k.b[d-DimRequests].on():
		return int(d - DimRequests)
	case d == DimTokens && k.b[1].on():
		return 1
	}
	return -1
}
