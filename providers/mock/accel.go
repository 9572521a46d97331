package mock

import "time"

// An acceleration (ramp) limit, Config.Acceleration: what OpenAI's
// slow_down and Anthropic's acceleration limits do to a sharp increase in
// traffic, whatever the nominal limits. Admissions are counted in fixed
// windows of AccelWindow (5s) from the first request; a window admits at
// most max(AccelFloor, 2 × the previous window's admissions) (20 unless
// set), and refuses the rest before any other limit is charged: OpenAI
// 429 code slow_down, Anthropic 429 rate_limit_error whose message names
// the acceleration limit, neither with a retry-after. The batch routes
// are not subject to it.

// accelState is the server's acceleration windows. Guarded by Server.mu.
type accelState struct {
	start     time.Time // start of the current window; zero before the first request
	cur, prev int64     // admissions in the current and the previous window
	started   bool
}

// accelWindow and accelFloor are the configured window and floor, or the
// defaults.
func (s *Server) accelWindow() time.Duration {
	if s.cfg.AccelWindow > 0 {
		return s.cfg.AccelWindow
	}
	return 5 * time.Second
}

func (s *Server) accelFloor() int64 {
	if s.cfg.AccelFloor > 0 {
		return int64(s.cfg.AccelFloor)
	}
	return 20
}

// accelRefuse returns the refusal of an attempt over the acceleration
// limit at now, or nil (then the caller admits it, see accelAdmitted).
// Requires s.mu.
func (s *Server) accelRefuse(now time.Time) *apiError {
	if !s.cfg.Acceleration {
		return nil
	}
	a, w := &s.accel, s.accelWindow()
	if !a.started {
		a.started, a.start = true, now
	}
	for !now.Before(a.start.Add(w)) {
		n := now.Sub(a.start) / w
		if n == 1 {
			a.prev, a.cur = a.cur, 0
		} else {
			a.prev, a.cur = 0, 0
		}
		a.start = a.start.Add(n * w)
	}
	if a.cur < max(s.accelFloor(), 2*a.prev) {
		return nil
	}
	s.stats.RateLimited++
	s.stats.Accelerated++
	return errAccelerated()
}

// accelAdmitted counts an admission in the current window. Requires s.mu.
func (s *Server) accelAdmitted() {
	if s.cfg.Acceleration {
		s.accel.cur++
	}
}

// errAccelerated is the dialects' refusal of a sharp increase.
func errAccelerated() *apiError {
	return &apiError{status: 429, oaType: "requests", oaCode: "slow_down", anType: "rate_limit_error",
		message:   "A sudden increase in your request rate is impacting service reliability. Please reduce your request rate to its original level, maintain a consistent rate, and then gradually increase it.",
		anMessage: "Your organization's usage increased too sharply and exceeded the acceleration limit. Please ramp up your traffic more gradually.",
		quotaID:   "GenerateRequestsAcceleration", quotaMetric: "generate_requests_acceleration",
	}
}
