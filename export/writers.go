package export

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// Formats are the names NewWriter takes.
var Formats = []string{"csv", "parquet", "jsonl"}

// NewWriter returns a writer of rows in format (csv, parquet or jsonl) to w.
func NewWriter(format string, w io.Writer) (Writer, error) {
	switch format {
	case "csv":
		return newCSV(w), nil
	case "parquet":
		return newParquet(w), nil
	case "jsonl":
		return &jsonlWriter{enc: json.NewEncoder(w)}, nil
	}
	return nil, fmt.Errorf("export: format %q: want csv, parquet or jsonl", format)
}

// Columns are the table's columns, in order (the CSV header).
var Columns = []string{"custom_id", "status", "prompt", "answer", "embeddings", "model", "provider", "finish_reason",
	"input_tokens", "output_tokens", "cost_usd", "latency_ms", "attempts", "error"}

// csvWriter writes a header row, then one record per row: an empty cell
// for a null, the embeddings as JSON text ([[0.1,0.2],...]).
type csvWriter struct {
	w      *csv.Writer
	header bool
	rec    []string
	// tags are the tag keys, a tag_KEY column each after Columns.
	tags []string
}

// SetTagKeys is TagColumns': a column per tag key.
func (c *csvWriter) SetTagKeys(keys []string) { c.tags = keys }

// columns are Columns and the tag columns.
func (c *csvWriter) columns() []string {
	cols := slices.Clone(Columns)
	for _, k := range c.tags {
		cols = append(cols, "tag_"+k)
	}
	return cols
}

func newCSV(w io.Writer) *csvWriter { return &csvWriter{w: csv.NewWriter(w)} }

func (c *csvWriter) Write(r *Row) error {
	if !c.header {
		c.header = true
		if err := c.w.Write(c.columns()); err != nil {
			return err
		}
	}
	emb := ""
	if r.Embeddings != nil {
		b, err := json.Marshal(r.Embeddings)
		if err != nil {
			return err
		}
		emb = string(b)
	}
	c.rec = append(c.rec[:0], r.CustomID, r.Status, cell(r.Prompt), cell(r.Answer), emb, cell(r.Model), cell(r.Provider),
		cell(r.FinishReason), intCell(r.InputTokens), intCell(r.OutputTokens), floatCell(r.CostUSD), intCell(r.LatencyMS),
		intCell(r.Attempts), cell(r.Error))
	for _, k := range c.tags {
		c.rec = append(c.rec, r.Tags[k])
	}
	return c.w.Write(c.rec)
}

func (c *csvWriter) Close() error {
	if !c.header { // no rows: still a table with its columns
		c.header = true
		if err := c.w.Write(c.columns()); err != nil {
			return err
		}
	}
	c.w.Flush()
	return c.w.Error()
}

func cell(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func intCell(n *int64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatInt(*n, 10)
}

func floatCell(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}

type jsonlWriter struct{ enc *json.Encoder }

func (j *jsonlWriter) Write(r *Row) error { return j.enc.Encode(r) }
func (j *jsonlWriter) Close() error       { return nil }

// Row groups end after rowGroupRows rows or rowGroupBytes of values
// (embeddings are large), bounding what the Parquet writer holds.
const (
	rowGroupRows  = 64 << 10
	rowGroupBytes = 64 << 20
)

// parquetWriter writes Parquet (zstd-compressed) through parquet-go, one
// row group at a time.
type parquetWriter struct {
	w     *parquet.GenericWriter[Row]
	rows  int
	bytes int
}

func newParquet(w io.Writer) *parquetWriter {
	return &parquetWriter{w: parquet.NewGenericWriter[Row](w, parquet.Compression(&parquet.Zstd))}
}

func (p *parquetWriter) Write(r *Row) error {
	if _, err := p.w.Write([]Row{*r}); err != nil {
		return err
	}
	p.rows++
	p.bytes += len(r.CustomID) + len(cell(r.Prompt)) + len(cell(r.Answer)) + len(cell(r.Error)) + 64
	for _, v := range r.Embeddings {
		p.bytes += 8 * len(v)
	}
	if p.rows >= rowGroupRows || p.bytes >= rowGroupBytes {
		p.rows, p.bytes = 0, 0
		return p.w.Flush()
	}
	return nil
}

func (p *parquetWriter) Close() error { return p.w.Close() }
