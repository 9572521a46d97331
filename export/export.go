// Package export turns a checkpoint (an output file and its errors file)
// into a table with one row per request: the answer's text (or an
// embeddings request's vectors), model, finish reason, tokens, cost,
// latency, attempts and error, and the prompt when the input is given. The
// rows are written as CSV, Parquet or JSONL, streamed: memory holds a table
// of 32 bytes per line of the files (outside the Go heap) and one Parquet
// row group, whatever the number of requests.
package export

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// Row is one request. Pointers are null (an empty CSV cell) where the
// request has no such value: a pending request has no answer, a failed
// one no tokens, a request of an output read without its input no prompt.
type Row struct {
	CustomID string `parquet:"custom_id" json:"custom_id"`
	// Status is succeeded, failed or pending (in the input, neither
	// answered nor failed).
	Status       string      `parquet:"status" json:"status"`
	Prompt       *string     `parquet:"prompt,optional" json:"prompt"`
	Answer       *string     `parquet:"answer,optional" json:"answer"`
	Embeddings   [][]float64 `parquet:"embeddings,optional,list" json:"embeddings,omitempty"`
	Model        *string     `parquet:"model,optional" json:"model"`
	Provider     *string     `parquet:"provider,optional" json:"provider"`
	FinishReason *string     `parquet:"finish_reason,optional" json:"finish_reason"`
	InputTokens  *int64      `parquet:"input_tokens,optional" json:"input_tokens"`
	OutputTokens *int64      `parquet:"output_tokens,optional" json:"output_tokens"`
	CostUSD      *float64    `parquet:"cost_usd,optional" json:"cost_usd"`
	LatencyMS    *int64      `parquet:"latency_ms,optional" json:"latency_ms"`
	Attempts     *int64      `parquet:"attempts,optional" json:"attempts"`
	Error        *string     `parquet:"error,optional" json:"error"`
	// Tags are the request's line's tags (CSV: a tag_KEY column per key
	// any line has).
	Tags map[string]string `parquet:"tags,optional" json:"tags,omitempty"`
}

// TagColumns is what a Writer with a column per tag key implements: it is
// told every key the files' lines carry before the first row.
type TagColumns interface {
	SetTagKeys(keys []string)
}

// maxTagKeys bounds the tag columns, whatever the files hold.
const maxTagKeys = 64

// Statuses of a row.
const (
	Succeeded = "succeeded"
	Failed    = "failed"
	Pending   = "pending"
)

// Writer writes rows in one format. Close flushes what it buffers; it does
// not close the underlying writer.
type Writer interface {
	Write(*Row) error
	Close() error
}

// Input is the run's input, read for the prompts: Records calls fn with
// every record (a JSON object) and its line number (source.Source.Records).
type Input interface {
	Records(fn func(record []byte, line int) error) error
}

// Options say what to export.
type Options struct {
	Output, Errors string
	// Input, if set, gives the rows their prompts, in input order, and a
	// pending row to each request neither answered nor failed; answers of
	// ids the input no longer has follow. Without it the rows follow the
	// output file, then the errors file.
	Input Input
}

// Counts is how many rows of each status were written.
type Counts struct{ Succeeded, Failed, Pending int }

// Export writes one row per request of o's checkpoint to w.
func Export(o Options, w Writer) (Counts, error) {
	e := &exporter{w: w}
	defer e.close()
	var err error
	if e.out, err = openIndexed(o.Output, true); err != nil {
		return e.c, err
	}
	if e.errs, err = openIndexed(o.Errors, false); err != nil {
		return e.c, err
	}
	if tc, ok := w.(TagColumns); ok {
		keys := make(map[string]bool)
		for k := range e.out.tagKeys {
			keys[k] = true
		}
		for k := range e.errs.tagKeys {
			keys[k] = true
		}
		tc.SetTagKeys(slices.Sorted(maps.Keys(keys)))
	}
	if o.Input != nil {
		if err := o.Input.Records(e.inputRecord); err != nil {
			return e.c, err
		}
	}
	// Answers (and then failures) not met in the input, in file order: the
	// latest line of each id.
	for _, f := range []*indexed{e.out, e.errs} {
		err := f.each(func(line []byte, w where) error {
			id := gjson.GetBytes(line, "custom_id").Str
			s, ok := f.t.get(keyOf(id))
			if !ok || s.off != w.off || s.seen != 0 {
				return nil // superseded by a later line, or written already
			}
			if f == e.errs {
				if _, ok := e.out.t.get(keyOf(id)); ok {
					return nil // answered since
				}
			}
			s.seen = 1
			return e.row(id, nil, line, f == e.out)
		})
		if err != nil {
			return e.c, err
		}
	}
	return e.c, nil
}

type exporter struct {
	w         Writer
	out, errs *indexed
	c         Counts
	buf       []byte
}

func (e *exporter) close() {
	for _, f := range []*indexed{e.out, e.errs} {
		if f != nil {
			f.close()
		}
	}
}

// inputRecord writes the row of one input request: its answer, its
// failure, or pending.
func (e *exporter) inputRecord(rec []byte, n int) error {
	root := gjson.ParseBytes(rec)
	id := root.Get("custom_id")
	if !id.Exists() {
		id = root.Get("key")
	}
	ids := id.Str
	if id.Type != gjson.String || ids == "" {
		ids = fmt.Sprintf("line-%d", n)
	}
	prompt := promptText(root)
	for _, f := range []*indexed{e.out, e.errs} {
		s, ok := f.t.get(keyOf(ids))
		if !ok {
			continue
		}
		line, err := f.read(s, &e.buf)
		if err != nil {
			return err
		}
		s.seen = 1
		return e.row(ids, &prompt, line, f == e.out)
	}
	e.c.Pending++
	return e.w.Write(&Row{CustomID: ids, Status: Pending, Prompt: &prompt, Tags: tagsOf(root.Get("tags"))})
}

// row writes the row of an output line (answered) or an errors-file line.
func (e *exporter) row(id string, prompt *string, line []byte, answered bool) error {
	root := gjson.ParseBytes(line)
	d := root.Get("llmrun")
	r := &Row{CustomID: id, Prompt: prompt}
	if answered {
		r.Status = Succeeded
		e.c.Succeeded++
		a := providers.ReadAnswer([]byte(root.Get("response.body").Raw))
		if a.Embeddings != nil {
			r.Embeddings = a.Embeddings
		} else {
			r.Answer = &a.Text
		}
		r.FinishReason = str(a.FinishReason)
	} else {
		r.Status = Failed
		e.c.Failed++
		msg := root.Get("error.message").String()
		if msg == "" {
			msg = root.Get("error.code").String()
		}
		r.Error = &msg
	}
	r.Model, r.Provider = str(d.Get("model").Str), str(d.Get("provider").Str)
	r.Attempts, r.LatencyMS = num(d.Get("attempts")), num(d.Get("latency_ms"))
	if answered {
		r.InputTokens, r.OutputTokens = num(d.Get("input_tokens")), num(d.Get("output_tokens"))
	}
	if c := d.Get("cost_usd"); c.Type == gjson.Number {
		r.CostUSD = &c.Num
	}
	r.Tags = tagsOf(d.Get("tags"))
	return e.w.Write(r)
}

func str(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func num(v gjson.Result) *int64 {
	if v.Type != gjson.Number {
		return nil
	}
	n := v.Int()
	return &n
}

// promptText is the prompt of an input record: a simple line's prompt, or
// the text of a request body (system and messages, instructions and input,
// the inputs to embed, Gemini's parts), one part a line.
func promptText(root gjson.Result) string {
	if p := root.Get("prompt"); p.Type == gjson.String {
		return p.Str
	}
	var text []byte
	switch {
	case root.Get("body").IsObject():
		body := []byte(root.Get("body").Raw)
		switch ep, _ := providers.EndpointOf(root.Get("url").Str); ep {
		case providers.EndpointResponses:
			text = providers.ResponsesText(body)
		case providers.EndpointEmbeddings:
			text = providers.EmbeddingsText(body)
		default:
			text = providers.MessagesText(body)
		}
	case root.Get("params").IsObject():
		text = providers.MessagesText([]byte(root.Get("params").Raw))
	case root.Get("request").IsObject():
		text = providers.ContentsText([]byte(root.Get("request").Raw))
	}
	return string(bytes.TrimSuffix(text, []byte("\n")))
}

// indexed is a checkpoint file with the table of its ids' latest lines.
type indexed struct {
	f *os.File
	t lines
	// tagKeys are the tag keys its lines carry (at most maxTagKeys).
	tagKeys map[string]bool
}

// tagsOf reads a tags object, nil when there is none.
func tagsOf(v gjson.Result) map[string]string {
	if !v.IsObject() {
		return nil
	}
	tags := make(map[string]string)
	v.ForEach(func(k, val gjson.Result) bool {
		tags[k.Str] = val.String()
		return true
	})
	if len(tags) == 0 {
		return nil
	}
	return tags
}

// openIndexed opens path and indexes it; a missing errors file is an empty
// one, a missing output an error.
func openIndexed(path string, required bool) (*indexed, error) {
	x := &indexed{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !required {
		return x, nil
	}
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	x.f = f
	err = x.each(func(line []byte, w where) error {
		if id := gjson.GetBytes(line, "custom_id"); id.Type == gjson.String {
			x.t.put(keyOf(id.Str), w)
		}
		if bytes.Contains(line, []byte(`"tags":{`)) {
			gjson.GetBytes(line, "llmrun.tags").ForEach(func(k, _ gjson.Result) bool {
				if x.tagKeys == nil {
					x.tagKeys = make(map[string]bool)
				}
				if len(x.tagKeys) < maxTagKeys {
					x.tagKeys[k.Str] = true
				}
				return true
			})
		}
		return nil
	})
	return x, err
}

// each calls fn with every complete, non-blank line of the file (a torn
// last line, still being written, is left out).
func (x *indexed) each(fn func(line []byte, w where) error) error {
	if x.f == nil {
		return nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(x.f, 0, 1<<62), 1<<20)
	var off int64
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("export: read %s: %w", x.f.Name(), err)
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = long[:0:0]
		}
		w := where{off: off, n: len(line) - 1}
		off += int64(len(line))
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if err := fn(t, w); err != nil {
				return err
			}
		}
	}
}

// read returns the line s points at, in *buf.
func (x *indexed) read(s *lineSlot, buf *[]byte) ([]byte, error) {
	if cap(*buf) < int(s.size) {
		*buf = make([]byte, s.size)
	}
	b := (*buf)[:s.size]
	if _, err := x.f.ReadAt(b, s.off); err != nil {
		return nil, fmt.Errorf("export: read %s: %w", x.f.Name(), err)
	}
	return bytes.TrimSpace(b), nil
}

func (x *indexed) close() {
	if x.f != nil {
		x.f.Close()
	}
	x.t.free()
}
