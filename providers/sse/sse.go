// Package sse decodes Server-Sent Events streams. It knows nothing of any
// provider: it turns bytes into (event name, data) pairs, following the
// WHATWG rules that matter for LLM APIs: LF or CRLF line ends, "field: value"
// with one optional space stripped, multi-line data joined with "\n", a
// repeated event: field replacing the earlier one, comment lines starting
// with ':' ignored, id/retry ignored, one leading UTF-8 BOM ignored, and an
// event dispatched on a blank line. Lines of any length are accepted.
//
// Two deliberate departures from WHATWG, both matching the official Go SDKs
// where it matters: a lone CR is not a line end (bufio.ScanLines behaviour),
// and a last event without its closing blank line is still dispatched at EOF
// (so a truncated stream's last event is visible to the provider, which then
// decides from its own terminator whether the stream was complete).
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// Event is one dispatched event. Its slices are owned by the Decoder and
// valid only until the next call to Next.
type Event struct {
	// Name is the event: field, empty when the event had none.
	Name []byte
	// Data is the data: lines joined with '\n' (no trailing newline).
	Data []byte
}

// Decoder reads events from a stream. It allocates only while a line or an
// event is larger than anything it has seen so far.
type Decoder struct {
	r       *bufio.Reader
	name    []byte
	data    []byte
	hasData bool
	long    []byte // reassembles lines longer than the bufio buffer
	ev      Event
	err     error
	started bool // the leading BOM check has been done
	pooled  bool // r came from readers
	// progress is the source's Progress method, if it has one: told of
	// every event dispatched, so that a reader timing the stream out for
	// idleness counts events, not bytes (keepalive comments are no
	// content).
	progress func()
	// first holds the events' data until one is larger: a chat chunk is
	// some 200-400 bytes, which a data slice grown from empty reached in
	// six allocations per stream (most of a short stream's decoding
	// allocations). The decoder is not reused, so events may alias it.
	first [firstData]byte
}

// firstData is the data capacity a decoder starts with.
const firstData = 512

// Progresser is a stream source that wants to know when an event arrived.
type Progresser interface{ Progress() }

// readers are the 16 KiB readers of finished decoders, for the next ones:
// a run reads one stream per request, and a new reader for each was most of
// the bytes a streaming run allocated (and so of its collections). Only the
// reader is reused, never the event buffers: callers may keep strings that
// alias an event's data (gjson hands out substrings of what it parses), and
// the reader's buffer never reaches an event (Next copies out of it).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}

const bufSize = 16 << 10

// errReleased is Err after Release.
var errReleased = errors.New("sse: decoder released")

// NewDecoder returns a Decoder reading from r. Call Release when done with
// it to pass its reader on to the next stream.
func NewDecoder(r io.Reader) *Decoder {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	d := &Decoder{r: br, pooled: true}
	d.data = d.first[:0]
	if p, ok := r.(Progresser); ok {
		d.progress = p.Progress
	}
	return d
}

// newDecoderSize lets tests shrink the buffer so the long-line path runs on
// small inputs. Its decoder is not pooled.
func newDecoderSize(r io.Reader, size int) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, size)}
}

// Release hands the decoder's reader to the next NewDecoder; Next reports
// false from then on. The events' slices stay valid. A second Release does
// nothing.
func (d *Decoder) Release() {
	if d.r == nil {
		return
	}
	if d.pooled {
		d.r.Reset(nil) // drop the stream
		readers.Put(d.r)
	}
	d.r, d.long, d.err = nil, nil, errReleased
}

// Next advances to the next event, returning false at the end of the stream
// or on a read error (see Err). Events with neither a name nor data (a bare
// blank line) are skipped.
func (d *Decoder) Next() bool {
	if d.err != nil {
		return false
	}
	d.name = d.name[:0]
	d.data = d.data[:0]
	d.hasData = false
	if !d.started {
		d.started = true
		// Peek may return fewer bytes with an error; the error resurfaces on
		// the first read below, so it is safe to ignore here.
		if b, _ := d.r.Peek(len(bom)); string(b) == bom {
			_, _ = d.r.Discard(len(bom))
		}
	}
	for {
		line, err := d.readLine()
		if err != nil {
			if err == io.EOF && (len(d.name) > 0 || d.hasData) {
				d.dispatch()
				d.err = io.EOF
				return true
			}
			d.err = err
			return false
		}
		if len(line) == 0 {
			if len(d.name) > 0 || d.hasData {
				d.dispatch()
				return true
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) { // no allocation: the compiler optimises string(b) in a switch
		case "event":
			// WHATWG: the last event: line wins; appending would glue names.
			d.name = append(d.name[:0], value...)
		case "data":
			if d.hasData {
				d.data = append(d.data, '\n')
			}
			d.data = append(d.data, value...)
			d.hasData = true
		}
	}
}

// bom is the UTF-8 byte order mark WHATWG tells decoders to skip.
const bom = "\xEF\xBB\xBF"

func (d *Decoder) dispatch() {
	d.ev = Event{Name: d.name, Data: d.data}
	if d.progress != nil {
		d.progress()
	}
}

// Event returns the current event.
func (d *Decoder) Event() Event { return d.ev }

// Err returns the read error that ended the stream, or nil at a clean EOF.
func (d *Decoder) Err() error {
	if d.err == io.EOF {
		return nil
	}
	return d.err
}

// readLine returns the next line without its LF or CRLF. At EOF, a last
// unterminated line is returned first, then io.EOF.
func (d *Decoder) readLine() ([]byte, error) {
	line, err := d.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		d.long = append(d.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = d.r.ReadSlice('\n')
			d.long = append(d.long, line...)
		}
		line = d.long
	}
	if err != nil && !(err == io.EOF && len(line) > 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, nil
}
