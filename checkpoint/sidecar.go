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
		return sidecar{}, false, fmt.Errorf("checkpoint: state file %s is not valid JSON (%v); it records open batch ids, so it is not replaced automatically", path, err)
	}
	for k, v := range sc.State {
		sc.State[k] = compact(v) // MarshalIndent indented it
	}
	if sc.Version > sidecarVersion {
		return sidecar{}, false, fmt.Errorf("checkpoint: state file %s has version %d; this llmrun reads up to %d", path, sc.Version, sidecarVersion)
	}
	return sc, true, nil
}

func (sc *sidecar) write(path string) error {
	b, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: encode state: %w", err)
	}
	return writeFileAtomic(path, append(b, '\n'))
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
