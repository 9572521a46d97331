package limiter

// CountsInput reports whether key's admissions are bound by input tokens:
// an input or combined-token bucket is in force, given, learned from
// rate-limit headers or from 429s. A key not used yet answers by the
// defaults. It takes no lock: the runner asks it once per admission to
// skip the tokenizer where no bucket would read its count.
func (l *Limiter) CountsInput(key string) bool {
	if k, ok := l.keys.Load(key); ok {
		return k.(*keyState).inputOn.Load()
	}
	d := normalize(l.defaults)
	return d.ITPM > 0 || d.TPM > 0
}

// CountsInput is the Limiter's.
func (b budgetOf) CountsInput(key string) bool { return b.l.CountsInput(key) }

// CountsTokens reports whether a day's budget may count tokens: a --tpd
// of the keys' own, or a provider's per-day token window seen in its
// headers (of any key: the answer is conservative, and lock-free).
func (d *Days) CountsTokens() bool {
	return d.defaults.Tokens > 0 || d.tokenWindows.Load()
}
