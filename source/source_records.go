package source

import "io"

// Records calls fn with every record of the input as it is written (a JSON
// object; a CSV row as an object of its header's fields) and its line
// number, in order, without parsing it into a request: for readers of the
// input other than a run (llmrun export joins prompts to answers with it).
// The record is valid only during the call.
func (s *Source) Records(fn func(record []byte, line int) error) error {
	r, err := s.open()
	if err != nil {
		return err
	}
	defer r.Close()
	return eachRecord(s.records(r), fn)
}

// eachRecord calls fn with every record lr reads and its line number,
// stopping at fn's first error or a read error.
func eachRecord(lr recordReader, fn func(record []byte, line int) error) error {
	for {
		rec, n, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(rec, n); err != nil {
			return err
		}
	}
}
