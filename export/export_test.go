package export

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

func answerLine(id, body string, extra string) string {
	return `{"id":"x","custom_id":"` + id + `","response":{"status_code":200,"body":` + body + `},"error":null,"llmrun":{"provider":"p","model":"m-` + id +
		`","attempts":2,"latency_ms":40,"input_tokens":7,"output_tokens":3` + extra + `,"fingerprint":"0000000000000001"}}`
}

func failLine(id, msg string) string {
	return `{"id":"x","custom_id":"` + id + `","response":{"status_code":400,"body":{}},"error":{"code":"invalid_request","message":"` + msg +
		`"},"llmrun":{"provider":"p","model":"m","attempts":1,"latency_ms":5,"input_tokens":0,"output_tokens":0}}`
}

func base64Vector(xs ...float32) string {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

type inputLines []string

func (in inputLines) Records(fn func([]byte, int) error) error {
	for i, l := range in {
		if err := fn([]byte(l), i+1); err != nil {
			return err
		}
	}
	return nil
}

type collect struct{ rows []Row }

func (c *collect) Write(r *Row) error { c.rows = append(c.rows, *r); return nil }
func (c *collect) Close() error       { return nil }

// fixture writes an output and errors file: a (answered twice: the later
// line counts), b (Anthropic), c (failed), d (embeddings, base64), e
// (failed, then answered: the answer counts), f (Gemini, not in the input).
func fixture(t *testing.T) Options {
	dir := t.TempDir()
	out := strings.Join([]string{
		answerLine("a", `{"object":"chat.completion","choices":[{"message":{"content":"old"},"finish_reason":"length"}]}`, ""),
		answerLine("b", `{"type":"message","content":[{"type":"text","text":"B1"},{"type":"tool_use"},{"type":"text","text":"B2"}],"stop_reason":"end_turn"}`, `,"cost_usd":0.5`),
		answerLine("a", `{"object":"chat.completion","choices":[{"message":{"content":"new"},"finish_reason":"stop"}]}`, `,"cost_usd":null`),
		answerLine("d", `{"object":"list","data":[{"embedding":"`+base64Vector(0.5, -2)+`"},{"embedding":"`+base64Vector(1)+`"}]}`, ""),
		answerLine("e", `{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"reasoning"},{"type":"message","content":[{"type":"output_text","text":"E"}]}]}`, ""),
		answerLine("f", `{"candidates":[{"content":{"parts":[{"text":"thinking","thought":true},{"text":"F"}]},"finishReason":"STOP"}]}`, ""),
		`{"custom_id":"torn","response":`,
	}, "\n")
	errs := failLine("c", "bad request") + "\n" + failLine("e", "was failing") + "\n"
	o := Options{Output: filepath.Join(dir, "x.out.jsonl"), Errors: filepath.Join(dir, "x.errors.jsonl")}
	os.WriteFile(o.Output, []byte(out), 0o600)
	os.WriteFile(o.Errors, []byte(errs), 0o600)
	return o
}

func TestExportWithInput(t *testing.T) {
	o := fixture(t)
	o.Input = inputLines{
		`{"custom_id":"e","prompt":"pe"}`,
		`{"custom_id":"a","body":{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"pa"}]}]}}`,
		`{"custom_id":"b","params":{"system":"sb","messages":[{"role":"user","content":"pb"}]}}`,
		`{"custom_id":"c","prompt":"pc"}`,
		`{"custom_id":"d","url":"/v1/embeddings","body":{"input":["d1","d2"]}}`,
		`{"custom_id":"g","prompt":"pg"}`,
		`{"prompt":"no id"}`,
	}
	var c collect
	counts, err := Export(o, &c)
	if err != nil {
		t.Fatal(err)
	}
	if counts != (Counts{Succeeded: 5, Failed: 1, Pending: 2}) {
		t.Errorf("counts %+v", counts)
	}
	got := map[string]Row{}
	var order []string
	for _, r := range c.rows {
		got[r.CustomID] = r
		order = append(order, r.CustomID)
	}
	if strings.Join(order, ",") != "e,a,b,c,d,g,line-7,f" {
		t.Errorf("order %v: want the input's, then f", order)
	}
	check := func(id, field, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s %s = %q, want %q", id, field, got, want)
		}
	}
	s := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	check("a", "answer", s(got["a"].Answer), "new")
	check("a", "finish", s(got["a"].FinishReason), "stop")
	check("a", "prompt", s(got["a"].Prompt), "sys\npa")
	check("b", "answer", s(got["b"].Answer), "B1B2")
	check("b", "finish", s(got["b"].FinishReason), "end_turn")
	check("b", "prompt", s(got["b"].Prompt), "sb\npb")
	check("c", "status", got["c"].Status, Failed)
	check("c", "error", s(got["c"].Error), "bad request")
	check("c", "answer", s(got["c"].Answer), "<nil>")
	check("e", "status", got["e"].Status, Succeeded)
	check("e", "answer", s(got["e"].Answer), "E")
	check("e", "finish", s(got["e"].FinishReason), "max_output_tokens")
	check("f", "answer", s(got["f"].Answer), "F")
	check("f", "prompt", s(got["f"].Prompt), "<nil>")
	check("g", "status", got["g"].Status, Pending)
	check("d", "prompt", s(got["d"].Prompt), "d1\nd2")
	if e := got["d"].Embeddings; len(e) != 2 || e[0][0] != 0.5 || e[0][1] != -2 || e[1][0] != 1 || got["d"].Answer != nil {
		t.Errorf("d: embeddings %v, answer %v", e, got["d"].Answer)
	}
	if r := got["b"]; r.CostUSD == nil || *r.CostUSD != 0.5 || got["a"].CostUSD != nil || *r.Attempts != 2 || *r.LatencyMS != 40 ||
		*r.InputTokens != 7 || *r.OutputTokens != 3 || s(r.Model) != "m-b" || s(r.Provider) != "p" {
		t.Errorf("b's figures: %+v", r)
	}
	if got["c"].InputTokens != nil {
		t.Errorf("a failure has tokens: %+v", got["c"])
	}
}

// TestExportWithoutInput: the output's order (latest line of each id),
// then failures not answered since.
func TestExportWithoutInput(t *testing.T) {
	var c collect
	counts, err := Export(fixture(t), &c)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range c.rows {
		order = append(order, r.CustomID+":"+r.Status[:1])
	}
	if strings.Join(order, ",") != "b:s,a:s,d:s,e:s,f:s,c:f" || counts != (Counts{Succeeded: 5, Failed: 1}) {
		t.Errorf("rows %v, counts %+v", order, counts)
	}
}

// TestWriters: the three formats hold the same rows (Parquet read back with
// parquet-go, across several row groups).
func TestWriters(t *testing.T) {
	o := fixture(t)
	var want collect
	if _, err := Export(o, &want); err != nil {
		t.Fatal(err)
	}
	for _, format := range Formats {
		var buf bytes.Buffer
		w, err := NewWriter(format, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if pw, ok := w.(*parquetWriter); ok {
			// One row group per two rows.
			pw.w = parquet.NewGenericWriter[Row](&buf, parquet.MaxRowsPerRowGroup(2))
		}
		if _, err := Export(o, w); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		var got []Row
		switch format {
		case "parquet":
			f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.RowGroups()); n != 3 {
				t.Errorf("%d row groups", n)
			}
			if got, err = parquet.Read[Row](bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
				t.Fatal(err)
			}
		case "jsonl":
			for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				var r Row
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Fatal(err)
				}
				got = append(got, r)
			}
		case "csv":
			if !strings.HasPrefix(buf.String(), strings.Join(Columns, ",")+"\n") || !strings.Contains(buf.String(), `,"[[0.5,-2],[1]]",`) {
				t.Fatalf("csv:\n%s", buf.String())
			}
			continue // read back field by field in cmd's TestExportReadBack
		}
		a, _ := json.Marshal(want.rows)
		b, _ := json.Marshal(got)
		if !bytes.Equal(a, b) {
			t.Errorf("%s read back:\n%s\nwant\n%s", format, b, a)
		}
	}
}
