package limiter

import (
	"encoding/json"
	"fmt"
)

// DayState is where the keys' own daily counts wait between runs: the
// output's checkpoint state, so that a rerun the same day does not start
// the day afresh.
type DayState interface {
	State(key string) (json.RawMessage, bool)
	SetState(key string, value json.RawMessage) error
}

// Load takes up the counts an earlier run left in st under key (Restore).
func (d *Days) Load(st DayState, key string) error {
	raw, ok := st.State(key)
	if !ok {
		return nil
	}
	var us []DayUsage
	if err := json.Unmarshal(raw, &us); err != nil {
		return fmt.Errorf("state %q: %w", key, err)
	}
	d.Restore(us)
	return nil
}

// Save leaves the counts for the next run in st under key (none: the
// state is removed).
func (d *Days) Save(st DayState, key string) error {
	us := d.Usage()
	if len(us) == 0 {
		if _, ok := st.State(key); !ok {
			return nil
		}
		return st.SetState(key, nil)
	}
	raw, err := json.Marshal(us)
	if err != nil {
		return err
	}
	return st.SetState(key, raw)
}
