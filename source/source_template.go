package source

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"
)

// Template renders an input record's fields into a prompt (--template).
// It is safe for concurrent use.
type Template struct {
	t *template.Template
}

// ParseTemplate parses a Go text/template. A field the template names and
// a record lacks is an error at that record's line, not an empty string.
func ParseTemplate(name, text string) (*Template, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	return &Template{t: t}, nil
}

// render executes the template on a record (a JSON object line); numbers
// print as they are written.
func (t *Template) render(record []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(record))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return "", fmt.Errorf("record: %v", err)
	}
	var b strings.Builder
	if err := t.t.Execute(&b, fields); err != nil {
		return "", fmt.Errorf("template: %v", err)
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", errors.New("the template rendered an empty prompt")
	}
	return b.String(), nil
}

// InputFormat is how the input's records are written.
type InputFormat int

const (
	// JSONL is one JSON object per line.
	JSONL InputFormat = iota
	// CSV is comma-separated values with a header row naming the fields;
	// each row becomes a record (a JSON object of strings).
	CSV
)

// ParseInputFormat parses --input-format; "" picks by the file name
// (x.csv, x.csv.gz, x.csv.zst are CSV).
func ParseInputFormat(v, path string) (InputFormat, error) {
	switch strings.ToLower(v) {
	case "jsonl", "json":
		return JSONL, nil
	case "csv":
		return CSV, nil
	case "":
		name := strings.ToLower(path)
		name = strings.TrimSuffix(strings.TrimSuffix(name, ".gz"), ".zst")
		if strings.HasSuffix(name, ".csv") {
			return CSV, nil
		}
		return JSONL, nil
	}
	return JSONL, fmt.Errorf("--input-format wants jsonl or csv, not %q", v)
}

// recordReader yields the input's records as JSON object lines with their
// 1-based line numbers; the line is valid until the next call.
type recordReader interface {
	next() ([]byte, int, error)
}

// records starts reading r's records in the source's format.
func (s *Source) records(r io.Reader) recordReader {
	lr := newLineReader(r, s.name(), s.lineBufSize())
	if s.Format == CSV {
		return newCSVReader(lr, s.name())
	}
	return lr
}

// csvReader turns CSV rows into JSON objects keyed by the header row.
type csvReader struct {
	r      *csv.Reader
	path   string
	header []string
	buf    []byte
}

func newCSVReader(lr *lineReader, path string) *csvReader {
	cr := csv.NewReader(lr.r) // lr.r has skipped a byte order mark
	cr.ReuseRecord = true
	return &csvReader{r: cr, path: path}
}

func (c *csvReader) next() ([]byte, int, error) {
	if c.header == nil {
		h, err := c.r.Read()
		if err == io.EOF {
			return nil, 0, io.EOF
		}
		if err != nil {
			return nil, 0, c.rowErr(err)
		}
		c.header = make([]string, len(h))
		seen := make(map[string]bool, len(h))
		for i, name := range h {
			name = strings.TrimSpace(name)
			switch {
			case name == "":
				return nil, 1, &InputError{Path: c.path, Line: 1, Msg: fmt.Sprintf("CSV header: column %d has no name", i+1)}
			case seen[name]:
				return nil, 1, &InputError{Path: c.path, Line: 1, Msg: fmt.Sprintf("CSV header: column %q appears twice", name)}
			}
			seen[name] = true
			c.header[i] = name
		}
	}
	row, err := c.r.Read()
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	if err != nil {
		return nil, 0, c.rowErr(err)
	}
	line, _ := c.r.FieldPos(0)
	c.buf = append(c.buf[:0], '{')
	for i, v := range row {
		if i > 0 {
			c.buf = append(c.buf, ',')
		}
		c.buf = appendJSONString(c.buf, c.header[i])
		c.buf = append(c.buf, ':')
		c.buf = appendJSONString(c.buf, v)
	}
	c.buf = append(c.buf, '}')
	return c.buf, line, nil
}

// rowErr makes CSV syntax and decompression errors input errors; others
// (reading, a changed input) pass as they are.
func (c *csvReader) rowErr(err error) error {
	var de *decodeError
	if errors.As(err, &de) {
		return &InputError{Path: c.path, Msg: de.Error()}
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) && isCSVSyntax(pe.Err) {
		return &InputError{Path: c.path, Line: pe.Line, Msg: "CSV: " + pe.Err.Error()}
	}
	return err
}

func isCSVSyntax(err error) bool {
	return errors.Is(err, csv.ErrFieldCount) || errors.Is(err, csv.ErrQuote) || errors.Is(err, csv.ErrBareQuote)
}

// appendJSONString appends s as a JSON string, escaping only what JSON
// requires: invalid UTF-8 is kept as it is, for the UTF-8 check to find.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = fmt.Appendf(b, `\u%04x`, c)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
