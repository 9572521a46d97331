package job

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/llmrun/llmrun/limiter"
)

// announce prints the start line at once, before anything is sent: what
// runs (input, output, errors file), against what (provider, endpoint,
// models), how much (requests in all, answered before, to send), under
// which limits and in which mode. On a terminal and in a redirected log
// alike it is the run's first line, so a log read later says what started.
func (b *batch) announce() {
	done, _ := b.store.Counts()
	done = min(done, b.total)
	f := startFacts{
		input: inputName(b.o.Input), output: b.o.Output, errors: b.o.Errors,
		routes: b.routeWords(), total: b.total, done: done,
		limits: limitsWords(b.limits, b.o.Pool, b.o.Redis != ""), mode: modeWords(&b.o.Offline),
	}
	if b.io.ErrIsTerminal && !b.io.JSONLogs {
		fmt.Fprint(b.io.Err, strings.Join(f.lines(), "\n")+"\n")
		return
	}
	b.io.infof("%s", startLine(f))
}

// startFacts are what the start line says.
type startFacts struct {
	input, output, errors string
	routes                []string
	total, done           int
	limits, mode          string
}

// lines are the start line's parts, the input and output first.
func (f startFacts) lines() []string {
	return []string{
		fmt.Sprintf("llmrun: %s → %s (errors to %s)", f.input, f.output, f.errors),
		"  " + strings.Join(f.routes, ", then "),
		fmt.Sprintf("  %d requests, %d answered before, %d to send", f.total, f.done, f.total-f.done),
		"  limits: " + f.limits,
		"  mode: " + f.mode,
	}
}

// startLine is the start as one log line.
func startLine(f startFacts) string {
	l := f.lines()
	for i := range l {
		l[i] = strings.TrimSpace(l[i])
	}
	return "start: " + strings.TrimPrefix(strings.Join(l, "; "), "llmrun: ")
}

// routeWords is each route as "provider endpoint model", the endpoint
// without credentials or query.
func (b *batch) routeWords() []string {
	var out []string
	for i, r := range b.routes {
		w := r.Provider.Name() + " " + safeURL(r.Provider.BaseURL())
		if strings.HasPrefix(r.Endpoint, "builtin:") {
			w = "the built-in mock (" + strings.TrimPrefix(r.Endpoint, "builtin:") + ", " + safeURL(r.Provider.BaseURL()) + ")"
		}
		model := r.Model
		if i == 0 && model == "" {
			model = b.o.Model
		}
		if model != "" {
			w += ", model " + model
		} else {
			w += " with each line's model"
		}
		out = append(out, w)
	}
	return out
}

// safeURL is u without its userinfo and query, which may hold secrets.
func safeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "(endpoint)"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}

// rateWords names the per-minute limits that are set, "rpm 500" and so
// on; prefix "--" names them as flags.
func rateWords(prefix string, rpm, itpm, otpm, tpm float64) []string {
	var parts []string
	for _, p := range []struct {
		name string
		v    float64
	}{{"rpm", rpm}, {"itpm", itpm}, {"otpm", otpm}, {"tpm", tpm}} {
		if p.v > 0 {
			parts = append(parts, prefix+p.name+" "+strconv.FormatFloat(p.v, 'f', -1, 64))
		}
	}
	return parts
}

// limitsWords says the limits in force: those given, or that they are
// learned from the server; and the concurrency cap.
func limitsWords(l limiter.Limits, pool string, shared bool) string {
	parts := rateWords("", l.RPM, l.ITPM, l.OTPM, l.TPM)
	if l.Auto {
		parts = append(parts, "learned from the server (headers, 429s)")
	}
	parts = append(parts, fmt.Sprintf("concurrency %d", l.Concurrency))
	if pool != "" {
		parts = append(parts, "pool "+pool)
	}
	if shared {
		parts = append(parts, "shared through Redis")
	}
	return strings.Join(parts, ", ")
}

func modeWords(o *OfflineOptions) string {
	switch o.Mode {
	case ModeBatch:
		return "the provider's batch API"
	case ModeAuto:
		return fmt.Sprintf("auto (the batch API from %d pending requests)", o.Threshold)
	}
	return "live API"
}
