package job

import (
	"fmt"
	"io"

	"github.com/llmrun/llmrun/checkpoint"
)

// Repair moves the malformed lines of the checkpoint at output (and of its
// errors file, errorsPath or the one its state records) aside and says
// what it moved on w.
func Repair(w io.Writer, output, errorsPath string) error {
	done, err := checkpoint.Repair(output, errorsPath)
	for _, r := range done {
		fmt.Fprintf(w, "%s: moved %d malformed lines (%d bytes) to %s\n", r.Path, r.Lines, r.Bytes, r.Rejected)
	}
	if err == nil && len(done) == 0 {
		fmt.Fprintf(w, "%s: no malformed lines\n", output)
	}
	return err
}
