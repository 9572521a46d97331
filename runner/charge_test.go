package runner

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// TestChargeRuleAdopted: a rule the headers show replaces the registry's
// for the key's next reservations and settlements, and the change is
// logged once in the words the issue asked for; a confirmation is not an
// Info line.
func TestChargeRuleAdopted(t *testing.T) {
	for _, tc := range []struct {
		registry   providers.OutputRule
		documented providers.ChargeRule
		learned    providers.ChargeRule
		reserve    int64 // output reserved afterwards for max_tokens 500
		settle     int64 // output settled for an answer of 30 tokens
		log        string
	}{
		{providers.ReserveExpected, providers.ChargeUnknown, providers.ChargeCap, 500, 500, "this deployment charges max_tokens at admission: reserving it"},
		{providers.ReserveCap, providers.ChargeCap, providers.ChargeOutput, 30, 30, "this deployment does not charge max_tokens at admission: reserving the expected output"},
		{providers.ReserveCap, providers.ChargeCap, providers.ChargeInput, 30, 30, "does not charge max_tokens"},
		{providers.ReserveCap, providers.ChargeUnknown, providers.ChargeCap, 500, 500, ""},
		{providers.ReserveExpected, providers.ChargeUnknown, providers.ChargeUnknown, 30, 30, ""},
		// Azure's row until the headers tell: the documented charge is kept.
		{providers.ReserveCap, providers.ChargeCap, providers.ChargeUnknown, 500, 500, ""},
		// OpenAI's: the cap is reserved, the answer settles what it used.
		{providers.ReserveCap, providers.ChargeUnknown, providers.ChargeUnknown, 500, 30, ""},
	} {
		var logs bytes.Buffer
		est := estimate.NewEstimator()
		for range 20 {
			est.ObserveOutput("k", 30)
		}
		r := &run{cfg: Config{Estimator: est, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}}
		route := Route{Provider: &slowProvider{}, Admission: providers.Admission{Output: tc.registry, Charge: tc.documented}}
		h := &hop{key: "k", route: route, req: &providers.Request{Model: "m", MaxTokens: 500}}
		r.charge("k", route).adopt(r.cfg.Log, h, tc.learned)
		cost := r.cost("k", route, h.req, 100)
		if cost.Output != tc.reserve {
			t.Errorf("%v over %v: reserves %d output, want %d", tc.learned, tc.registry, cost.Output, tc.reserve)
		}
		lim := limiter.New(limiter.Options{})
		resv, err := lim.Reserve(context.Background(), "k", cost)
		if err != nil {
			t.Fatal(err)
		}
		p := &reservation{r: r, h: h, resv: resv}
		if got := p.settleOutput(providers.Usage{InputTokens: 100, OutputTokens: 30}); got != tc.settle {
			t.Errorf("%v over %v: settles %d output, want %d", tc.learned, tc.registry, got, tc.settle)
		}
		resv.Cancel()
		if got := logs.String(); tc.log == "" && got != "" || tc.log != "" && strings.Count(got, tc.log) != 1 {
			t.Errorf("%v over %v: logged %q, want %q", tc.learned, tc.registry, got, tc.log)
		}
	}
}

// TestTightMaxTokensNote: the note comes once answers are many (50) and
// use under a quarter of the max_tokens reserved, with the figure and a
// max_tokens that would have covered every answer.
func TestTightMaxTokensNote(t *testing.T) {
	for _, tc := range []struct {
		answers                int
		outSum, capSum, outMax int64
		want                   string // "" for no note
	}{
		{49, 49 * 36, 49 * 400, 80, ""},
		{50, 50 * 100, 50 * 400, 200, ""}, // exactly a quarter
		{50, 50 * 36, 50 * 400, 80, "answers average 36 output tokens, 9% of the max_tokens 400 each request reserves (50 answers)"},
		{200, 200 * 36, 200 * 400, 80, "a max_tokens of about 100 would cover every answer so far"},
	} {
		msg, ok := providers.TightNote(tc.answers, tc.outSum, tc.capSum, tc.outMax)
		if ok != (tc.want != "") || !strings.Contains(msg, tc.want) {
			t.Errorf("%d answers, %d of %d: note %q (%v), want %q", tc.answers, tc.outSum, tc.capSum, msg, ok, tc.want)
		}
	}
}

// TestTightNoteOnce: a key reserving its whole cap says it once, and a key
// reserving the expected output never does.
func TestTightNoteOnce(t *testing.T) {
	for _, rule := range []providers.OutputRule{providers.ReserveCap, providers.ReserveExpected} {
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		c := &chargeState{rule: rule}
		h := &hop{route: Route{Provider: &slowProvider{}}, req: &providers.Request{Model: "m", MaxTokens: 400}}
		for range 200 {
			c.noteAnswer(log, h, 40)
		}
		want := 0
		if rule == providers.ReserveCap {
			want = 1
		}
		if n := strings.Count(logs.String(), "the run holds token budget it never uses"); n != want {
			t.Errorf("rule %v: %d notes, want %d:\n%s", rule, n, want, logs.String())
		}
	}
}
