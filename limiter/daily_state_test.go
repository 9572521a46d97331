package limiter

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// mapState is a checkpoint's state in memory.
type mapState map[string]json.RawMessage

func (m mapState) State(k string) (json.RawMessage, bool) { v, ok := m[k]; return v, ok }
func (m mapState) SetState(k string, v json.RawMessage) error {
	if v == nil {
		delete(m, k)
	} else {
		m[k] = v
	}
	return nil
}

// TestDaysSaveLoad: the counts saved by one run are the next run's the
// same day; a day with nothing used removes the state; a state that does
// not parse is an error naming its key.
func TestDaysSaveLoad(t *testing.T) {
	now := day0
	opts := DaysOptions{Defaults: DayLimits{Requests: 2}, Now: func() time.Time { return now }}
	st := mapState{}
	first := NewDays(opts)
	if _, err := first.TakeAt(day0, "k", time.UTC, Cost{Requests: 1}); err != nil {
		t.Fatal(err)
	}
	if err := first.Save(st, "daily"); err != nil || st["daily"] == nil {
		t.Fatalf("save: %v, state %s", err, st["daily"])
	}
	second := NewDays(opts)
	if err := second.Load(st, "daily"); err != nil {
		t.Fatal(err)
	}
	if _, err := second.TakeAt(day0, "k", time.UTC, Cost{Requests: 1}); err != nil {
		t.Fatalf("the second of 2: %v", err)
	}
	_, err := second.TakeAt(day0, "k", time.UTC, Cost{Requests: 1})
	wantDayLimit(t, err, DimRequests, 2, midnight)
	if err := NewDays(opts).Save(st, "daily"); err != nil || len(st) != 0 {
		t.Fatalf("nothing used: %v, state %v", err, st)
	}
	st["daily"] = json.RawMessage(`{`)
	if err := NewDays(opts).Load(st, "daily"); err == nil || !strings.Contains(err.Error(), `state "daily"`) {
		t.Fatalf("torn state: %v", err)
	}
}
