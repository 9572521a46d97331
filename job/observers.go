package job

import (
	"reflect"
	"time"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

// observers is one runner.Observer that tells each of obs (nil ones skipped); nil
// when none is left, so that an unwatched run pays nothing.
func observers(obs ...runner.Observer) runner.Observer {
	var m multiObserver
	for _, o := range obs {
		if o != nil && !isNilObserver(o) {
			m = append(m, o)
		}
	}
	switch len(m) {
	case 0:
		return nil
	case 1:
		return m[0]
	}
	return m
}

// isNilObserver catches a typed nil pointer in the interface.
func isNilObserver(o runner.Observer) bool {
	v := reflect.ValueOf(o)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

type multiObserver []runner.Observer

func (m multiObserver) Start(v *runner.View) {
	for _, o := range m {
		o.Start(v)
	}
}

func (m multiObserver) AdmissionWait(key string, d time.Duration) {
	for _, o := range m {
		o.AdmissionWait(key, d)
	}
}

func (m multiObserver) Request(req *providers.Request) runner.RequestObserver {
	var rs multiRequest
	for _, o := range m {
		if r := o.Request(req); r != nil {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	return rs
}

type multiRequest []runner.RequestObserver

func (m multiRequest) AttemptStart(a *runner.Attempt) {
	for _, r := range m {
		r.AttemptStart(a)
	}
}

func (m multiRequest) AttemptEnd(a *runner.Attempt) {
	for _, r := range m {
		r.AttemptEnd(a)
	}
}

func (m multiRequest) End(e *runner.RequestEnd) {
	for _, r := range m {
		r.End(e)
	}
}
