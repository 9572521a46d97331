package checkpoint

// idMerge confirms, while Open's load reads the output, that the ids of
// the output's answers are exactly the ids of the run's input (the
// InputSet given as Options.Expect), comparing the strings themselves:
// each answer's id is met with the next id of the input, read on another
// goroutine, and the two that differ wait in a small map until their
// partner comes. A rerun's output is in about input order (answers land
// at most a concurrency's width from their place), so the map stays
// small; past mergeCap it gives up and SkipAll confirms id by id instead.
//
// This is what lets SkipAll accept a finished run's output without
// reading it a second time: the load reads every line anyway, and the
// input's ids are read once, beside it.
type idMerge struct {
	set  InputSet
	ids  chan []string
	stop chan struct{}
	err  chan error

	batch   []string
	next    int  // the next id of batch to meet
	ended   bool // the input has no more ids
	answers int  // answer lines met
	// pending holds the ids met on one side only: +1 output, -1 input.
	pending map[string]int8
	failed  bool
	ok      bool // finish confirmed the match
	cap     int  // the most ids pending before it gives up
}

// mergeCap bounds the ids waiting for their partner.
const mergeCap = 1 << 16

// mergeBatch is how many input ids the reading goroutine hands over at once.
const mergeBatch = 512

// startMerge starts reading set's ids; nil if set cannot be read again.
func startMerge(set InputSet, limit int) *idMerge {
	if set.ids == nil || set.n == 0 {
		return nil
	}
	m := &idMerge{set: set, ids: make(chan []string, 2), stop: make(chan struct{}), err: make(chan error, 1), pending: map[string]int8{}, cap: limit}
	go m.read()
	return m
}

// read sends the input's ids in batches until they end or stop is closed.
func (m *idMerge) read() {
	defer close(m.ids)
	batch := make([]string, 0, mergeBatch)
	send := func() bool {
		select {
		case m.ids <- batch:
			batch = make([]string, 0, mergeBatch)
			return true
		case <-m.stop:
			return false
		}
	}
	stopped := false
	err := m.set.ids(func(id string) bool {
		if batch = append(batch, id); len(batch) == mergeBatch && !send() {
			stopped = true
			return false
		}
		return true
	})
	if err == nil && !stopped && len(batch) > 0 {
		send()
	}
	m.err <- err
}

// answer meets the id of one answer line with the input's next id, and
// reports whether the merge is still on (it has not given up).
func (m *idMerge) answer(id []byte) bool {
	if m == nil || m.failed {
		return false
	}
	m.answers++
	in, ok := m.input()
	if ok && string(id) == in {
		return true
	}
	if m.pending[string(id)] == -1 {
		delete(m.pending, string(id))
	} else {
		m.pending[string(id)] = 1
	}
	if ok {
		m.meetInput(in)
	}
	if len(m.pending) > m.cap || m.answers > m.set.n {
		m.abandon()
	}
	return !m.failed
}

// meetInput records an input id met before its answer, or cancels it
// against its answer met before.
func (m *idMerge) meetInput(id string) {
	if m.pending[id] == 1 {
		delete(m.pending, id)
		return
	}
	m.pending[id] = -1
}

// input returns the input's next id; false once the input has ended.
func (m *idMerge) input() (string, bool) {
	for m.next == len(m.batch) {
		if m.ended {
			return "", false
		}
		b, ok := <-m.ids
		if !ok {
			m.ended = true
			return "", false
		}
		m.batch, m.next = b, 0
	}
	m.next++
	return m.batch[m.next-1], true
}

// finish meets the input's remaining ids after the output's last answer
// and says whether the two hold the same ids, each once.
func (m *idMerge) finish() bool {
	if m == nil || m.failed {
		return false
	}
	if m.answers != m.set.n {
		m.abandon()
		return false
	}
	for {
		in, ok := m.input()
		if !ok {
			break
		}
		if m.meetInput(in); len(m.pending) > m.cap {
			m.abandon()
			return false
		}
	}
	err := <-m.err
	m.ok = err == nil && len(m.pending) == 0
	m.failed, m.pending, m.batch = true, nil, nil // done: later answers are not met
	return m.ok
}

// abandon stops the reading goroutine and waits for it; the match is not
// confirmed.
func (m *idMerge) abandon() {
	if m == nil || m.failed {
		return
	}
	m.failed, m.pending, m.batch = true, nil, nil
	close(m.stop)
	for range m.ids {
	}
	<-m.err
}

// confirmed reports whether finish confirmed exactly the requests of in.
func (m *idMerge) confirmed(in InputSet) bool {
	return m != nil && m.ok && m.set.n == in.n && m.set.sum == in.sum
}
