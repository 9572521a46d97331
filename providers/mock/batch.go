package mock

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmrun/llmrun/internal/ctxsleep"
)

// This file is the provider-neutral core of the two batch APIs
// (batch_openai.go, batch_anthropic.go): a batch's timeline, the outcome of
// each of its items and the Stats they feed.
//
// A batch's life is a pure function of its creation time, Config and the
// clock (Config.Now): nothing runs in the background. Every call that looks
// at a batch first settles it, and a batch that has reached its end is
// finalized once, computing all its result lines.
//
// Timeline, with D = Config.BatchDelay measured from creation:
//
//	OpenAI     validating [0, D/10) → in_progress [D/10, 9D/10) → finalizing [9D/10, D) → completed at D
//	Anthropic  in_progress [0, D) → ended at D
//	Gemini     PENDING [0, D/10) → RUNNING [D/10, D) (items done over [D/10, 9D/10)) → SUCCEEDED at D
//
// Items are processed in input order, at an even pace over the in_progress
// span. A cancel at time c keeps the items processed by c, shows
// cancelling/canceling until c+D/10 and then ends the batch (cancelled,
// ended; Gemini stays RUNNING, having no cancelling state) with the rest
// not executed. With BatchExpire the batch processes
// only the first half of its items (n/2, rounded down) and expires at D;
// a BatchDelay past the completion window (24 h; Gemini 48 h) expires then with what
// was processed by then.

// Batch limits of the providers (Config.BatchMaxItems/BatchMaxBytes override).
const (
	openAIBatchMaxItems    = 50_000
	openAIBatchMaxBytes    = 200 << 20
	anthropicBatchMaxItems = 100_000
	anthropicBatchMaxBytes = 256 << 20
)

// batchWindow is the completion window of OpenAI's and Anthropic's
// batches; Gemini's runs 48 hours (geminiBatchWindow).
const batchWindow = 24 * time.Hour

// window is how long b may run before it expires.
func (b *mbatch) window() time.Duration {
	if b.d.tag() == 'g' {
		return geminiBatchWindow
	}
	return batchWindow
}

// batchStore holds the files and batches of a Server. Lock order: mu before
// Server.mu.
type batchStore struct {
	mu      sync.Mutex
	seq     int
	files   map[string]*mfile
	batches map[string]*mbatch
	// fileList and batchList hold the files and batches in creation order,
	// for the list endpoints (newest first).
	fileList  []*mfile
	batchList []*mbatch
	// uploads and gmFiles are Gemini's Files API: uploads started, and
	// files by name ("files/…"), input and output alike.
	uploads map[string]gmUpload
	gmFiles map[string][]byte
	// completions counts successful answers by custom_id as sent.
	completions map[string]int
	inFlight    atomic.Int64
}

// BatchCompletions returns, by custom_id as sent, how many times a batch
// item was answered successfully: a request a client paid for twice shows
// 2. Items count when their batch ends (see the timeline above).
func (s *Server) BatchCompletions() map[string]int {
	s.batches.mu.Lock()
	defer s.batches.mu.Unlock()
	return maps.Clone(s.batches.completions)
}

// BatchCallsInFlight is the number of batch and file API calls being
// handled (a create held by BatchCallDelay included).
func (s *Server) BatchCallsInFlight() int { return int(s.batches.inFlight.Load()) }

// holdAnswer waits BatchCallDelay before a create call is answered, or
// until the client has gone.
func (s *Server) holdAnswer(r *http.Request) {
	ctxsleep.For(r.Context(), s.cfg.BatchCallDelay)
}

// mfile is an uploaded or generated OpenAI file.
type mfile struct {
	id, filename, purpose string
	created               time.Time
	data                  []byte
}

// itemKind is how one batch item ended.
type itemKind uint8

const (
	itemSucceeded itemKind = iota
	itemErrored            // an error answer (invalid body, BatchFailRate)
	itemExpired            // not executed: the window expired
	itemCanceled           // not executed: the batch was cancelled
)

// bitem is one request of a batch.
type bitem struct {
	customID string
	body     []byte
	h        [32]byte // bodyHash, as for a synchronous request
	ok       bool     // it will succeed once executed
}

// bresult is one item's outcome. body is the answer (succeeded) or the
// error body (errored), in the batch's format.
type bresult struct {
	kind   itemKind
	status int
	reqID  string
	body   []byte
	err    *apiError
}

// mbatch is one batch of either API.
type mbatch struct {
	id      string
	d       dialect
	created time.Time
	items   []bitem

	// Gemini only: the displayName, and whether the requests came in a
	// file (the responses then go to one, outFile).
	name      string
	fileInput bool

	// OpenAI only.
	inputFile, endpoint string
	metadata            []byte
	invalid             []lineError // the input failed validation: the batch fails

	cancelAt   time.Time // zero: not cancelled
	cancelDone int       // items processed when the cancel arrived

	okBefore []int // okBefore[k]: how many of the first k items succeed

	ended    bool
	endAt    time.Time
	endState string // OpenAI: completed, expired, cancelled, failed; Anthropic: the same, rendered as ended
	done     int    // items processed when it ended
	results  []bresult
	order    []int  // output order of results (not input order, as the providers warn)
	counts   [4]int // results by itemKind
	outFile  string // OpenAI output_file_id, "" for null
	errFile  string // OpenAI error_file_id, "" for null
}

// lineError is a batch-level validation error of an OpenAI input file.
type lineError struct {
	code, message, param string
	line                 int
}

func (s *Server) batchLimits(items int, bytes int64) (int, int64) {
	if s.cfg.BatchMaxItems > 0 {
		items = s.cfg.BatchMaxItems
	}
	if s.cfg.BatchMaxBytes > 0 {
		bytes = s.cfg.BatchMaxBytes
	}
	return items, bytes
}

// nextID returns prefix followed by a fresh, deterministic suffix. Requires
// bs.mu.
func (bs *batchStore) nextID(prefix string) string {
	bs.seq++
	sum := sha256.Sum256([]byte(prefix + strconv.Itoa(bs.seq)))
	return prefix + hex.EncodeToString(sum[:12])
}

// register stores b under a fresh id and counts it. Requires bs.mu.
func (s *Server) register(b *mbatch, prefix string) {
	bs := &s.batches
	b.id = bs.nextID(prefix)
	b.okBefore = make([]int, len(b.items)+1)
	for i := range b.items {
		it := &b.items[i]
		_, aerr := s.parseRuled(b.d, it.body)
		it.ok = aerr == nil && !s.batchFails(it)
		b.okBefore[i+1] = b.okBefore[i]
		if it.ok {
			b.okBefore[i+1]++
		}
	}
	if bs.batches == nil {
		bs.batches = make(map[string]*mbatch)
	}
	bs.batches[b.id] = b
	bs.batchList = append(bs.batchList, b)
	s.mu.Lock()
	s.stats.BatchesCreated++
	s.stats.BatchItems += int64(len(b.items))
	s.mu.Unlock()
}

// target is how many items the batch processes if nothing stops it.
func (s *Server) target(b *mbatch) int {
	if s.cfg.BatchExpire {
		return len(b.items) / 2
	}
	return len(b.items)
}

// workSpan is when items are processed.
func (s *Server) workSpan(b *mbatch) (from, to time.Time) {
	d := s.cfg.BatchDelay
	if b.d.tag() == 'o' || b.d.tag() == 'g' {
		return b.created.Add(d / 10), b.created.Add(d - d/10)
	}
	return b.created, b.created.Add(d)
}

// processed is how many items the batch has processed by now.
func (s *Server) processed(b *mbatch, now time.Time) int {
	if b.invalid != nil {
		return 0
	}
	from, to := s.workSpan(b)
	n := s.target(b)
	switch {
	case now.Before(from):
		return 0
	case !now.Before(to):
		return n
	}
	return int(float64(n) * float64(now.Sub(from)) / float64(to.Sub(from)))
}

// settle moves b to its end if the end has come by now. Requires bs.mu.
func (s *Server) settle(b *mbatch, now time.Time) {
	if b.ended {
		return
	}
	d := s.cfg.BatchDelay
	end, expires := b.created.Add(d), b.created.Add(b.window())
	switch {
	case !b.cancelAt.IsZero():
		if at := b.cancelAt.Add(d / 10); !now.Before(at) {
			s.finish(b, at, "cancelled", b.cancelDone)
		}
	case b.invalid != nil:
		if at := b.created.Add(d / 10); !now.Before(at) {
			s.finish(b, at, "failed", 0)
		}
	case expires.Before(end) && !now.Before(expires):
		s.finish(b, expires, "expired", s.processed(b, expires))
	case !now.Before(end):
		state := "completed"
		if s.cfg.BatchExpire {
			state = "expired"
		}
		s.finish(b, end, state, s.target(b))
	}
}

// cancel starts cancelling b at now; it reports false if b has ended or is
// being cancelled already. Requires bs.mu.
func (s *Server) cancel(b *mbatch, now time.Time) bool {
	s.settle(b, now)
	if b.ended || !b.cancelAt.IsZero() {
		return false
	}
	b.cancelAt, b.cancelDone = now, s.processed(b, now)
	s.bump(&s.stats.BatchesCanceled)
	return true
}

// finish ends b at t: the first done items (input order) get their answers,
// the rest are expired or cancelled. Requires bs.mu.
func (s *Server) finish(b *mbatch, t time.Time, state string, done int) {
	b.ended, b.endAt, b.endState, b.done = true, t, state, done
	if state == "failed" {
		return
	}
	b.results = make([]bresult, len(b.items))
	for i := range b.items {
		var r bresult
		switch {
		case i < done:
			r = s.execute(b.d, &b.items[i])
		case state == "cancelled":
			r.kind = itemCanceled
		default:
			r.kind = itemExpired
		}
		b.results[i] = r
		b.counts[r.kind]++
	}
	s.mu.Lock()
	s.stats.BatchSucceeded += int64(b.counts[itemSucceeded])
	s.stats.BatchErrored += int64(b.counts[itemErrored])
	s.stats.BatchExpired += int64(b.counts[itemExpired])
	s.stats.BatchCanceledItems += int64(b.counts[itemCanceled])
	s.mu.Unlock()
	// Shuffle the output order, deterministically: clients must join on
	// custom_id.
	sum := sha256.Sum256([]byte(b.id))
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), uint64(s.cfg.Seed)))
	b.order = rng.Perm(len(b.items))
	if b.d.tag() == 'o' {
		s.writeOutputFiles(b)
	}
	if b.fileInput {
		s.writeGMOutputFile(b)
	}
}

// execute answers one item as the synchronous endpoint would answer its
// body (same ids, text and usage), or fails it: an invalid body with the
// synchronous 400, and a BatchFailRate draw with a 500.
func (s *Server) execute(d dialect, it *bitem) bresult {
	reqID := s.arrive(it.h)
	req, aerr := s.parseRuled(d, it.body)
	if aerr == nil && !it.ok {
		aerr = errServer()
	}
	if aerr != nil {
		return bresult{kind: itemErrored, status: d.errorStatus(aerr), reqID: reqID, body: d.errorBody(aerr, reqID), err: aerr}
	}
	if req.model == "" {
		req.model = defaultModel
	}
	c := newCompletion(d, it.h, req, reqID, s.cfg.AnswerWords)
	if s.batches.completions == nil {
		s.batches.completions = make(map[string]int)
	}
	s.batches.completions[it.customID]++
	s.mu.Lock()
	s.stats.Completed++
	s.stats.InputTokens += int64(c.inTokens)
	s.stats.OutputTokens += int64(c.outTokens)
	s.completed(it.h)
	s.mu.Unlock()
	return bresult{kind: itemSucceeded, status: http.StatusOK, reqID: reqID, body: d.plainBody(c)}
}

// batchFails draws whether an item fails with BatchFailRate, from Seed, the
// custom_id and the body: the same item fails in every run.
func (s *Server) batchFails(it *bitem) bool {
	if s.cfg.BatchFailRate <= 0 {
		return false
	}
	sum := sha256.Sum256(append([]byte(it.customID+"\x00"), it.h[:]...))
	x := splitmix(binary.LittleEndian.Uint64(sum[:8]) ^ splitmix(uint64(s.cfg.Seed)^0x62617463))
	return float64(x>>11)/(1<<53) < s.cfg.BatchFailRate
}

// batchPrelude starts every batch API call: it gives the call its request
// id (in d's header) and applies what every API request faces first:
// Outage, APIKey and SpendCap. It writes the failure and reports false
// when one applies.
func (s *Server) batchPrelude(w http.ResponseWriter, r *http.Request, d dialect, spends bool) (reqID string, ok bool) {
	s.bump(&s.stats.BatchCalls)
	s.batches.mu.Lock()
	reqID = s.batches.nextID("req_")
	s.batches.mu.Unlock()
	w.Header().Set(d.requestIDHeader(), reqID)
	if s.cfg.Outage {
		s.bump(&s.stats.ServerErrors)
		s.fail(w, d, reqID, errOutage())
		return reqID, false
	}
	if s.cfg.APIKey != "" {
		if sent := sentKey(r); sent != s.cfg.APIKey {
			s.bump(&s.stats.Unauthorized)
			s.fail(w, d, reqID, errAuth(sent))
			return reqID, false
		}
	}
	if spends && s.cfg.SpendCap {
		s.bump(&s.stats.SpendCapped)
		s.fail(w, d, reqID, errQuota())
		return reqID, false
	}
	return reqID, true
}

func errNoSuch(what, id string) *apiError {
	return &apiError{status: 404, oaType: "invalid_request_error", anType: "not_found_error",
		message: "No " + what + " found with id '" + id + "'."}
}

func errBatchTooLarge(msg string) *apiError {
	return &apiError{status: 413, oaType: "invalid_request_error", anType: "request_too_large", message: msg}
}

// registerBatchRoutes adds the batch endpoints of both APIs to the mux.
func (s *Server) registerBatchRoutes() {
	for pattern, h := range map[string]http.HandlerFunc{
		"POST /v1/files":                                s.handleFileUpload,
		"GET /v1/files":                                 s.handleFileList,
		"GET /v1/files/{id}":                            s.handleFileGet,
		"GET /v1/files/{id}/content":                    s.handleFileContent,
		"POST /v1/batches":                              s.handleOABatchCreate,
		"GET /v1/batches":                               s.handleOABatchList,
		"GET /v1/batches/{id}":                          s.handleOABatchGet,
		"POST /v1/batches/{id}/cancel":                  s.handleOABatchCancel,
		"POST /v1/messages/batches":                     s.handleANBatchCreate,
		"GET /v1/messages/batches":                      s.handleANBatchList,
		"GET /v1/messages/batches/{id}":                 s.handleANBatchGet,
		"GET /v1/messages/batches/{id}/results":         s.handleANBatchResults,
		"POST /v1/messages/batches/{id}/cancel":         s.handleANBatchCancel,
		"POST /upload" + geminiPrefix + "files":         s.handleGMUpload,
		"GET /download" + geminiPrefix + "files/{call}": s.handleGMDownload,
		"GET " + geminiPrefix + "batches":               s.handleGMBatchList,
		"GET " + geminiPrefix + "batches/{id}":          s.handleGMBatchGet,
		"POST " + geminiPrefix + "batches/{call}":       s.handleGMBatchCancel,
	} {
		s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			s.batches.inFlight.Add(1)
			defer s.batches.inFlight.Add(-1)
			h(w, r)
		})
	}
}

// listBatches answers a list of dialect d's batches, newest first, each as
// seen now (settled): limit (default 20, at most maxLimit), the cursor in
// query parameter after, the list opened by head and each batch rendered
// by render.
func (s *Server) listBatches(w http.ResponseWriter, r *http.Request, d dialect, maxLimit int, after, head string, render func([]byte, *mbatch, time.Time) []byte) {
	reqID, ok := s.batchPrelude(w, r, d, false)
	if !ok {
		return
	}
	limit, aerr := listLimit(r, 20, maxLimit)
	if aerr != nil {
		s.badRequest(w, d, reqID, aerr)
		return
	}
	now := s.now()
	s.batches.mu.Lock()
	var all []*mbatch
	for _, b := range s.batches.batchList {
		if b.d.tag() == d.tag() {
			all = append(all, b)
		}
	}
	page, more := listPage(all, batchID, r.URL.Query().Get(after), limit)
	b := []byte(head)
	for i, m := range page {
		if i > 0 {
			b = append(b, ',')
		}
		s.settle(m, now)
		b = render(b, m, now)
	}
	s.batches.mu.Unlock()
	writeJSON(w, appendListEnd(b, page, batchID, more))
}

func batchID(b *mbatch) string { return b.id }

// listPage is one page of a list endpoint: newest first, the items after
// the one called after ("" for the first page), at most limit of them.
// It reports whether more follow.
func listPage[T any](all []T, id func(T) string, after string, limit int) ([]T, bool) {
	i := len(all) - 1
	if after != "" {
		for i >= 0 && id(all[i]) != after {
			i--
		}
		i--
	}
	var page []T
	for ; i >= 0 && len(page) < limit; i-- {
		page = append(page, all[i])
	}
	return page, i >= 0
}

// listLimit reads a list endpoint's limit parameter: def when absent, an
// error outside 1..max.
func listLimit(r *http.Request, def, max int) (int, *apiError) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, errInvalid("limit", "limit must be an integer from 1 to "+strconv.Itoa(max)+", got '"+v+"'")
	}
	return n, nil
}

// batchGetOrCancel answers a GET of batch id of dialect d (what names it
// in a 404) or, with cancel, cancels it first: one that has ended cannot
// be, and is answered with ended's 400; one already cancelling is answered
// again. render makes the answer, under the batches' lock.
func (s *Server) batchGetOrCancel(w http.ResponseWriter, r *http.Request, d dialect, id, what string, cancel bool,
	ended func(*mbatch) *apiError, render func(*mbatch, time.Time) []byte) {
	b, reqID, now, ok := s.lockBatch(w, r, d, id, what)
	if !ok {
		return
	}
	defer s.batches.mu.Unlock()
	if cancel && !s.cancel(b, now) && b.ended {
		s.badRequest(w, d, reqID, ended(b))
		return
	}
	writeJSON(w, render(b, now))
}

// lockBatch starts a call on one batch: the prelude, then the batch id of
// dialect d, settled at now (what names it in a 404). On success it returns
// with s.batches.mu held, for the caller to release; on failure it has
// released it and answered.
func (s *Server) lockBatch(w http.ResponseWriter, r *http.Request, d dialect, id, what string) (b *mbatch, reqID string, now time.Time, ok bool) {
	if reqID, ok = s.batchPrelude(w, r, d, false); !ok {
		return nil, reqID, now, false
	}
	now = s.now()
	s.batches.mu.Lock()
	if b = s.batchLocked(id, d, now); b == nil {
		s.batches.mu.Unlock()
		s.bump(&s.stats.NotFound)
		s.fail(w, d, reqID, errNoSuch(what, id))
		return nil, reqID, now, false
	}
	return b, reqID, now, true
}

// batchLocked returns the batch id of dialect d, settled at now, or nil.
// Requires bs.mu.
func (s *Server) batchLocked(id string, d dialect, now time.Time) *mbatch {
	b := s.batches.batches[id]
	if b == nil || b.d.tag() != d.tag() {
		return nil
	}
	s.settle(b, now)
	return b
}

func writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// appendUnixOrNull appends t as unix seconds, or null for the zero time.
func appendUnixOrNull(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, t.Unix(), 10)
}
