package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/llmrun/llmrun/internal/outfile"
)

// sidecarVersion is the state file format this package writes and reads.
const sidecarVersion = 1

// sidecar is the content of "<output>.state.json". Everything in it but State
// is for the user's information (and Status): resuming compares requests by
// their fingerprints in the output, not files or settings.
type sidecar struct {
	Version  int                        `json:"version"`
	Output   string                     `json:"output"`
	Errors   string                     `json:"errors"`
	Input    *sidecarInput              `json:"input,omitempty"`
	Settings map[string]string          `json:"settings,omitempty"`
	State    map[string]json.RawMessage `json:"state,omitempty"`
	// Dropped is the sum of Options.Tally over the lines compactions have
	// dropped; DroppedPending is a compaction's sum recorded before its
	// rename, counted once the file is found at its new size.
	Dropped        float64         `json:"dropped,omitempty"`
	DroppedPending *droppedPending `json:"dropped_pending,omitempty"`
	Created        time.Time       `json:"created"`
	Updated        time.Time       `json:"updated"`
}

// droppedPending is a compaction of File under way: Sum moves into Dropped
// if File has Size bytes (the rewrite is in place; dropping lines always
// shrinks a file, so the old one never has that size).
type droppedPending struct {
	File string  `json:"file"`
	Sum  float64 `json:"sum"`
	Size int64   `json:"size"`
}

// settle moves a pending compaction's sum into Dropped if its rewrite took
// place; either way nothing is pending after it.
func (sc *sidecar) settle() {
	p := sc.DroppedPending
	if p == nil {
		return
	}
	size := int64(0) // a file the rewrite emptied is removed
	if fi, err := os.Stat(p.File); err == nil {
		size = fi.Size()
	} else if !errors.Is(err, os.ErrNotExist) {
		size = -1
	}
	if size == p.Size {
		sc.Dropped += p.Sum
	}
	sc.DroppedPending = nil
}

// sidecarInput names the input of the last run.
type sidecarInput struct {
	Path string `json:"path"`
}

func statePath(output string) string { return output + ".state.json" }

// readSidecar reads the state file; found is false if there is none.
func readSidecar(path string) (sc sidecar, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return sidecar{}, false, nil
	}
	if err != nil {
		return sidecar{}, false, fmt.Errorf("checkpoint: read state: %w", err)
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return sidecar{}, false, &StateError{Path: path, Reason: fmt.Sprintf("is not valid JSON (%v)", err),
			Fix: "it records the run's open provider batches, so llmrun does not replace it: fix it, or move it aside and rerun (a batch still open at the provider may then be submitted again)"}
	}
	for k, v := range sc.State {
		sc.State[k] = compact(v) // MarshalIndent indented it
	}
	if sc.Version > sidecarVersion {
		return sidecar{}, false, &StateError{Path: path, Reason: fmt.Sprintf("has version %d; this llmrun reads up to %d", sc.Version, sidecarVersion),
			Fix: "run the newer llmrun that wrote it"}
	}
	return sc, true, nil
}

// write replaces the state file, owner-only (mode 0600) because the settings
// and the state describe endpoints, and with URL credentials removed;
// dirSync fsyncs its directory after the rename.
func (sc *sidecar) write(path string, dirSync func(dir string) error) error {
	out := *sc
	out.Settings = maps.Clone(sc.Settings)
	for k, v := range out.Settings {
		out.Settings[k] = withoutUserinfo(v)
	}
	out.State = maps.Clone(sc.State)
	for k, v := range out.State {
		out.State[k] = scrubJSON(v)
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: encode state: %w", err)
	}
	return writeFileAtomic(path, append(b, '\n'), filePerm, false, dirSync)
}

// compact returns v without insignificant space; v must be valid JSON.
func compact(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// StatePath is the state file the checkpoint of output keeps beside it
// (beside its target if output is a symlink).
func StatePath(output string) string { return statePath(outfile.MustResolve(output)) }

// LockPath is the lock file of an output or errors file: beside the file
// it resolves to, so that every name of one file takes one lock.
func LockPath(file string) string { return outfile.MustResolve(file) + ".lock" }
