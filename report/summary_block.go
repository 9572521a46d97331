package report

import (
	"fmt"
	"strings"
	"time"
)

// Block is the summary as a terminal shows it at the end of a run: a
// heading with the outcome, then one labelled line a figure, as rclone
// ends a copy. Each line fits width columns except the resume command,
// which is kept whole to be copied. The one-line Text stays for logs.
func (s *Summary) Block(outcome, resume string, width int) string {
	if width <= 0 {
		width = 80
	}
	var b strings.Builder
	line := func(label, text string) {
		if label != "" {
			label += ":"
		}
		if text != "" {
			b.WriteString(cutColumns(fmt.Sprintf("%-10s %s", label, text), width-1) + "\n")
		}
	}
	b.WriteString(cutColumns("llmrun: "+outcome, width-1) + "\n")
	line("Requests", s.requestsLine())
	line("Attempts", s.attemptsLine())
	line("Tokens", fmt.Sprintf("%s in / %s out", thousands(s.InputTokens), thousands(s.OutputTokens)))
	if s.PricesDate != "" {
		line("Cost", strings.TrimPrefix(s.costString(), "; cost "))
	}
	line("Elapsed", durString(time.Duration(s.WallSeconds*float64(time.Second))))
	line("Waited", s.waitsLine())
	for i, c := range s.causes() {
		label := ""
		if i == 0 {
			label = "Failed"
		}
		line(label, c)
	}
	if s.OutputFile != "" {
		line("Answers", s.OutputFile)
	}
	if s.Failed > 0 && s.ErrorsFile != "" {
		line("Errors", s.ErrorsFile)
	}
	if resume != "" && s.Pending > 0 {
		fmt.Fprintf(&b, "%-10s %s\n", "Resume:", resume)
	}
	return b.String()
}

func (s *Summary) requestsLine() string {
	parts := []string{fmt.Sprintf("%s total", thousands(s.Requests)), fmt.Sprintf("%s succeeded", thousands(s.Succeeded))}
	for _, p := range []struct {
		n    int64
		word string
	}{{s.Failed, "failed"}, {s.Skipped, "done before"}, {s.Pending, "pending"}, {s.FellBack, "fell back"}} {
		if p.n > 0 {
			parts = append(parts, thousands(p.n)+" "+p.word)
		}
	}
	return strings.Join(parts, ", ")
}

func (s *Summary) attemptsLine() string {
	line := thousands(s.Attempts)
	if s.Retries > 0 || s.RateLimited > 0 {
		line += fmt.Sprintf(" (%s, %s)", plural(s.Retries, "retry", "retries"), plural(s.RateLimited, "429", "429s"))
	}
	if s.BreakerOpenings > 0 {
		line += fmt.Sprintf("; breaker opened %s, held %.1fs", times(s.BreakerOpenings), s.HeldSeconds)
	}
	return line
}

// waitsLine is the share of request time spent waiting, by limit, most
// first: "RPM 88%, input TPM 4%" (empty when waits were negligible).
func (s *Summary) waitsLine() string {
	by, dims, _ := s.waitsByLimit()
	if dims == nil {
		return ""
	}
	var parts []string
	for _, d := range dims {
		if share := by[d] / s.RequestSeconds; share >= 0.01 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", Words(d), 100*min(share, 1)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + " of request time"
}

// causes are the failures by cause, commonest first, three at most and
// a line for the rest.
func (s *Summary) causes() []string {
	all := s.causesByCount()
	var out []string
	for i, e := range all {
		if i == 3 {
			var rest int64
			for _, r := range all[3:] {
				rest += r.n
			}
			out = append(out, fmt.Sprintf("%s × %s", thousands(rest), plural(int64(len(all)-3), "other cause", "other causes")))
			break
		}
		out = append(out, fmt.Sprintf("%s × %s", thousands(e.n), e.cause))
	}
	return out
}

// thousands is n with thousands separated: 1,234,567.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
