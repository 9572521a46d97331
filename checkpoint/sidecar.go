package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"
)

// sidecarVersion is the state file format this package writes and reads.
const sidecarVersion = 1

// sidecar is the content of "<output>.state.json".
type sidecar struct {
	Version  int                        `json:"version"`
	Output   string                     `json:"output"`
	Errors   string                     `json:"errors"`
	Input    *InputInfo                 `json:"input,omitempty"`
	Settings map[string]string          `json:"settings,omitempty"`
	State    map[string]json.RawMessage `json:"state,omitempty"`
	Created  time.Time                  `json:"created"`
	Updated  time.Time                  `json:"updated"`
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
// and the state describe endpoints, and with URL credentials removed.
func (sc *sidecar) write(path string) error {
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
	return writeFileAtomic(path, append(b, '\n'), filePerm, false)
}

// settingsDiffs compares the recorded settings with the current ones over the
// union of their keys; nil if cur is nil (not checked).
func settingsDiffs(rec, cur map[string]string) []string {
	if cur == nil || rec == nil {
		return nil
	}
	keys := slices.Sorted(maps.Keys(rec))
	for k := range cur {
		if _, ok := rec[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var d []string
	for _, k := range keys {
		a, inA := rec[k]
		b, inB := cur[k]
		switch {
		case !inA:
			d = append(d, fmt.Sprintf("setting %s: unset → %q", k, b))
		case !inB:
			d = append(d, fmt.Sprintf("setting %s: %q → unset", k, a))
		case a != b:
			d = append(d, fmt.Sprintf("setting %s: %q → %q", k, a, b))
		}
	}
	return d
}

// compact returns v without insignificant space; v must be valid JSON.
func compact(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}
