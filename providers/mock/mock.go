// Package mock is a fake LLM provider: an http.Handler that speaks the
// OpenAI Chat Completions, Anthropic Messages and Gemini generateContent
// wire formats, plain and
// streamed, with deterministic answers, server-side rate limits and
// injectable faults. llmrun's end-to-end tests, `llmrun mock` and
// `llmrun batch --provider mock` run it over loopback HTTP.
//
// Routes:
//
//	POST /v1/chat/completions, POST /chat/completions   OpenAI format
//	POST /v1/messages                                   Anthropic format
//	POST /v1/messages/count_tokens                      Anthropic token count (count_tokens.go)
//	POST /v1/responses                                  OpenAI Responses API (responses.go)
//	POST /v1/embeddings                                 OpenAI embeddings (embeddings.go)
//	POST /v1beta/models/{model}:generateContent         Gemini format (gemini.go);
//	     …:streamGenerateContent?alt=sse, …:countTokens, …:embedContent,
//	     …:batchEmbedContents, …:batchGenerateContent
//	GET  /mock/stats                                    Stats as JSON
//
// Azure OpenAI's dialect under /openai (azure.go), and the batch APIs
// (batch.go): OpenAI POST /v1/files, GET /v1/files/{id}
// and /v1/files/{id}/content, POST /v1/batches, GET /v1/batches/{id}, POST
// /v1/batches/{id}/cancel; Anthropic POST /v1/messages/batches, GET
// /v1/messages/batches/{id} and /v1/messages/batches/{id}/results, POST
// /v1/messages/batches/{id}/cancel; Gemini GET /v1beta/batches and
// /v1beta/batches/{id}, POST /v1beta/batches/{id}:cancel (batch_gemini.go),
// and the Files API its large batches use, POST /upload/v1beta/files and GET
// /download/v1beta/files/{id}:download (batch_gemini_file.go). GET /v1/models
// and /v1beta/models list the models (features.go).
//
// Anything else is a 404 in the OpenAI format, in the Anthropic format
// when the request carries x-api-key or anthropic-version, in Gemini's
// under /v1beta/ or with x-goog-api-key.
//
// An API request goes through these stages, in order; the first that
// answers ends it: read the body (413 past 32 MiB); Outage (500); APIKey
// (401); parse and validate the body (400); SpendCap (429); the day's
// requests (RPD, 429, daily.go); StreamFailure (500, streamfail.go); the
// acceleration limit (429, accel.go); rate limits (429); faults
// (503/529, 500, reset, mid-stream error); the answer.
package mock

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmrun/llmrun/internal/ctxsleep"
	"github.com/llmrun/llmrun/modelrules"
)

// Config configures a Server. The zero value is an unlimited, fault-free
// server without authentication.
//
// The fault rates are fractions of admitted attempts; the faults are
// exclusive, so their sum should not exceed 1. Whether an attempt faults is
// a function of Seed, the request body (see Stats.Duplicates for what counts
// as the same body) and how many attempts of that body were admitted before,
// so runs are reproducible whatever the arrival order: a client that
// retries every body until it succeeds sees the same faults on every run.
type Config struct {
	// Concurrency caps the requests in flight; 0 means unlimited.
	Concurrency int
	// RPM, ITPM and OTPM are per-minute limits on requests, input tokens and
	// output tokens; 0 means unlimited. Each is a bucket refilling
	// continuously at limit/60 per second and holding at most limit/60*Burst
	// seconds' worth, like a strict provider that enforces per-minute limits
	// in short windows.
	RPM, ITPM, OTPM float64
	// Burst is the bucket window; 0 means one second.
	Burst time.Duration

	// OverloadRate answers 529 overloaded_error (Anthropic) or 503 (OpenAI).
	OverloadRate float64
	// MidStreamRate sends an error event after some content (OpenAI
	// data: {"error":...}; Anthropic event: error, overloaded_error) in
	// streams, and a 500 to non-streaming requests.
	MidStreamRate float64
	// ResetRate closes the TCP connection abruptly (RST): after some
	// content when streaming, before any response otherwise.
	ResetRate float64
	// ServerErrorRate answers a plain 500.
	ServerErrorRate float64

	// Outage answers 500 api_error/server_error to every API request.
	Outage bool
	// SpendCap answers every API request with the spend-cap error: OpenAI
	// 429 insufficient_quota; Anthropic 429 rate_limit_error with
	// error.details.error_code "enforced_spend_limit_reached". Neither
	// carries retry-after.
	SpendCap bool
	// APIKey, if set, must be sent as "Authorization: Bearer <key>",
	// "x-api-key: <key>" or (Azure) "api-key: <key>"; otherwise the answer is a 401 whose message echoes
	// a masked form of the key sent (its first 8 and last 4 characters, as
	// in "sk-abc12***wxyz"; fewer for keys under 16 characters).
	APIKey string

	// TokenDelay is the delay before each streamed token; non-streaming
	// answers wait TokenDelay times their output tokens.
	TokenDelay time.Duration
	// AnswerWords, when positive, makes every answer that many words long
	// after its head (see AnswerWords) instead of 8 to 24: long answers for
	// streaming benchmarks, as real answers run to hundreds of tokens.
	AnswerWords int
	// Seed selects which attempts fault.
	Seed int64
	// Now is the clock of the rate-limit buckets and headers and of the
	// batches' timelines; nil means time.Now. TokenDelay always uses real
	// timers.
	Now func() time.Time

	// BatchDelay is how long a batch takes to process, by Now (see
	// batch.go for the timeline); 0 ends a batch at its first poll.
	BatchDelay time.Duration
	// BatchFailRate is the fraction of batch items answered with a 500
	// error instead of their answer, drawn from Seed and the item.
	BatchFailRate float64
	// BatchExpire makes every batch expire at the end of BatchDelay with
	// only the first half of its items (input order) answered.
	BatchExpire bool
	// BatchMaxItems and BatchMaxBytes, when positive, replace the
	// providers' batch limits (OpenAI: 50,000 lines and 200 MB per input
	// file; Anthropic: 100,000 requests and 256 MB per batch, else 413).
	BatchMaxItems int
	BatchMaxBytes int64
	// BatchCallDelay holds the answer to a file upload or a batch create
	// for this long (real time) after the object was created: the window in
	// which a client that dies has created something it never heard of.
	BatchCallDelay time.Duration

	// Acceleration refuses sharp increases (see accel.go): a window of
	// AccelWindow (0: 5s) admits at most max(AccelFloor (0: 20), 2 × the
	// previous window's admissions).
	Acceleration bool
	AccelWindow  time.Duration
	AccelFloor   int
	// StreamFailure answers every streamed request with 500
	// {"status":"failure"} (a gateway that cannot stream); plain requests
	// succeed (see streamfail.go).
	StreamFailure bool

	// NoLimitHeaders sends no rate-limit headers at all (an API gateway,
	// vLLM behind an ingress, Gemini); the limits still apply.
	NoLimitHeaders bool
	// NoRetryAfter sends rate-limit 429s without retry-after and
	// retry-after-ms, as many proxies do.
	NoRetryAfter bool

	// RPD limits the requests admitted per calendar day of DayZone (nil:
	// UTC) by Now; 0 means unlimited. See daily.go. DayHeaders reports
	// the day in the x-ratelimit-*-requests headers, as Groq does.
	RPD        float64
	DayZone    *time.Location
	DayHeaders bool
	// AzureChargeMaxTokens makes Azure requests charge their prompt plus
	// max_tokens at admission into the token counter, as Microsoft
	// documents (see azure_charge.go).
	AzureChargeMaxTokens bool
	// NoUsage answers OpenAI Chat Completions without usage, plain and
	// streamed (whatever stream_options asks), as some local servers do.
	NoUsage bool

	// RememberBodies bounds how many distinct request bodies the server
	// remembers (for request ids, fault selection and Stats.Duplicates),
	// forgetting the oldest first; 0 means DefaultRemember. A body
	// forgotten and sent again counts as new.
	RememberBodies int
	// CachePrefixes bounds the prompt cache (see Stats.CacheReadTokens),
	// in prefixes, oldest evicted first; 0 means DefaultRemember.
	CachePrefixes int

	// NoModelRules turns off the model-family rules (rules.go): by
	// default a body its model's family refuses (max_tokens to a
	// reasoning model, JSON mode without "json", temperature with top_p to
	// recent Claude models) is answered 400, as the real APIs answer it.
	NoModelRules bool
	// KnownModels answers 404 to a model no family of the dialect's
	// provider claims (other than the mock's default, mock-1).
	KnownModels bool
}

// Stats counts what the server has seen. Attempts counts every request to
// an API route; the fault counters count injected faults by kind.
type Stats struct {
	Attempts int64 `json:"attempts"`
	// Completed counts full successful answers (for streams: the final
	// event was written).
	Completed int64 `json:"completed"`
	// Duplicates counts completions of a body already completed before
	// (the stream flag and stream_options are ignored when comparing).
	Duplicates   int64 `json:"duplicates"`
	RateLimited  int64 `json:"rate_limited"`
	Accelerated  int64 `json:"accelerated"` // of RateLimited: over the acceleration limit
	DayLimited   int64 `json:"day_limited"` // of RateLimited: refused for the day (RPD)
	Overloaded   int64 `json:"overloaded"`
	ServerErrors int64 `json:"server_errors"` // ServerErrorRate faults and Outage answers
	MidStream    int64 `json:"mid_stream"`    // error events, and MidStreamRate 500s of non-streams
	Resets       int64 `json:"resets"`
	Unauthorized int64 `json:"unauthorized"`
	SpendCapped  int64 `json:"spend_capped"`
	BadRequests  int64 `json:"bad_requests"` // 400 and 413
	NotFound     int64 `json:"not_found"`
	// Canceled counts admitted requests whose client went away before the
	// answer was complete.
	Canceled    int64 `json:"canceled"`
	InFlight    int64 `json:"in_flight"`
	MaxInFlight int64 `json:"max_in_flight"`
	// InputTokens and OutputTokens are the tokens of admitted requests'
	// input (cached or not) and of the output actually generated.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CountTokens counts the count_tokens / countTokens calls answered
	// (count_tokens.go).
	CountTokens int64 `json:"count_tokens"`
	// CacheReadTokens and CacheWriteTokens are the input tokens reported
	// as read from and written to the prompt cache. Anthropic requests
	// cache the prefix up to each block carrying cache_control (the first
	// request writes it, later ones with the same prefix read it, and
	// reads do not count toward ITPM; unlike the real API, no minimum
	// length applies); OpenAI requests of 1,024 tokens or more cache their
	// prompt in 128-token steps, and a later request repeating such a
	// prefix reads it.
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`

	// Batch APIs. Answered batch items count in Completed, Duplicates and
	// the token figures too (when their batch ends), so a test can check
	// that no request was answered twice across batch and live runs.
	BatchCalls         int64 `json:"batch_calls"`     // HTTP calls to the batch and file routes
	FilesUploaded      int64 `json:"files_uploaded"`  // OpenAI and Gemini input files
	BatchesCreated     int64 `json:"batches_created"` // incl. OpenAI batches that fail validation
	BatchesCanceled    int64 `json:"batches_canceled"`
	BatchItems         int64 `json:"batch_items"` // requests in created batches
	BatchSucceeded     int64 `json:"batch_succeeded"`
	BatchErrored       int64 `json:"batch_errored"`
	BatchExpired       int64 `json:"batch_expired"`
	BatchCanceledItems int64 `json:"batch_canceled_items"`
}

// maxBody is the largest request body accepted (Anthropic's Messages limit).
const maxBody = 32 << 20

// defaultModel names the model when a request leaves it empty.
const defaultModel = "mock-1"

// Server is the mock provider. Create it with New; it is safe for
// concurrent use.
type Server struct {
	cfg Config
	now func() time.Time
	mux *http.ServeMux
	// rules are the model-family rules (rules.go).
	rules *modelrules.Rules

	mu            sync.Mutex
	reqs, in, out *bucket // nil when unlimited
	day           dayState
	inFlight      int64
	bodies        *fifo[bodyState] // see memory.go
	prefixes      *fifo[struct{}]  // the prompt cache
	stats         Stats
	accel         accelState

	batches batchStore
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.Burst <= 0 {
		cfg.Burst = time.Second
	}
	s := &Server{
		cfg:      cfg,
		now:      cfg.Now,
		reqs:     newBucket(cfg.RPM, cfg.Burst),
		in:       newBucket(cfg.ITPM, cfg.Burst),
		out:      newBucket(cfg.OTPM, cfg.Burst),
		bodies:   newFIFO[bodyState](cfg.RememberBodies),
		prefixes: newFIFO[struct{}](cfg.CachePrefixes),
		rules:    modelrules.Default(),
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/chat/completions", s.handleAPI(s.local(openAI{})))
	s.mux.HandleFunc("POST /chat/completions", s.handleAPI(s.local(openAI{})))
	s.mux.HandleFunc("POST /v1/messages", s.handleAPI(anthropic{}))
	s.mux.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens)
	s.mux.HandleFunc("POST /v1/responses", s.handleAPI(responses{}))
	s.mux.HandleFunc("POST /v1/embeddings", s.handleAPI(embeddings{}))
	s.mux.HandleFunc("POST "+geminiPrefix+"models/{call}", s.handleGemini)
	s.mux.HandleFunc("GET /mock/stats", s.handleStats)
	s.registerBatchRoutes()
	s.registerAzureRoutes()
	s.registerModelRoutes()
	s.mux.HandleFunc("/", s.handleNotFound)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// dialect is one wire format.
type dialect interface {
	tag() byte
	requestIDHeader() string
	parse(body []byte) (*request, *apiError)
	errorStatus(e *apiError) int
	errorBody(e *apiError, reqID string) []byte
	setLimitHeaders(h http.Header, l limitState, now time.Time)
	plainBody(c *completion) []byte
	streamStart(b []byte, c *completion) []byte
	streamDelta(b []byte, c *completion, text string) []byte
	streamFinish(b []byte, c *completion) []byte
	streamError(b []byte, c *completion) []byte
}

// request is what the mock needs from a request body.
type request struct {
	model        string
	prompt       string // the last user message's text
	maxTokens    int    // 0: no cap
	inTokens     int
	stream       bool
	includeUsage bool
	// prefixes are the request's cacheable prefixes, shortest first;
	// cacheWrites says whether caching them is billed as a write
	// (Anthropic) and whether reads are free of the input limit.
	prefixes    []prefix
	cacheWrites bool
	// embed is an embeddings request's inputs (nil for the others).
	embed *embedRequest
	// shape is what the answer's form must be beyond text (features.go).
	shape *shape

	// capCharge is what admission charges beyond the input tokens (see
	// azure_charge.go); 0 for every other request.
	capCharge int
}

// completion is one answer, ready to be written in either shape.
type completion struct {
	id, model, reqID string
	created          int64
	text             string
	truncated        bool
	chunks           []chunk
	inTokens         int // all input tokens, cached or not
	cacheRead        int
	cacheWrite       int
	outTokens        int
	includeUsage     bool
	// seq is the next sequence_number of a Responses stream.
	seq int
	// embed is an embeddings answer's inputs (nil for the others).
	embed *embedRequest
	shape *shape
}

// chunk is one streamed content event: text made of n pieces (tokens).
type chunk struct {
	text string
	n    int
}

// badRequest counts a request refused as malformed or too large, and
// answers e.
func (s *Server) badRequest(w http.ResponseWriter, d dialect, reqID string, e *apiError) {
	s.bump(&s.stats.BadRequests)
	s.fail(w, d, reqID, e)
}

func (s *Server) bump(p *int64) {
	s.mu.Lock()
	*p++
	s.mu.Unlock()
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	b, _ := json.Marshal(s.Stats())
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	var d dialect = openAI{}
	switch {
	case r.Header.Get("x-api-key") != "" || r.Header.Get("anthropic-version") != "":
		d = anthropic{}
	case r.Header.Get("x-goog-api-key") != "" || strings.HasPrefix(r.URL.Path, geminiPrefix):
		d = gemini{}
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	reqID := s.arrive(bodyHash(d.tag(), []byte(r.Method+" "+r.URL.Path+"\n"+string(body))))
	w.Header().Set(d.requestIDHeader(), reqID)
	s.bump(&s.stats.NotFound)
	s.fail(w, d, reqID, errNotFound(r.Method, r.URL.Path))
}

// handleAPI serves one dialect's completion routes. A request passes the
// server-wide refusals (check), then the limits (grant), then the faults, in
// the order a real provider meets them, so that each failure is counted
// once and a refused request holds no slot.
func (s *Server) handleAPI(d dialect) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.bump(&s.stats.Attempts)
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				s.badRequest(w, d, "", errTooLarge())
			}
			return // otherwise the client is gone
		}
		h := bodyHash(d.tag(), body)
		reqID := s.arrive(h)
		w.Header().Set(d.requestIDHeader(), reqID)

		req, e := s.check(r, d, body)
		if e != nil {
			s.fail(w, d, reqID, e)
			return
		}
		if s.streamFails(w, req) {
			return
		}
		g, e := s.grant(h, req)
		if e != nil {
			s.fail(w, d, reqID, e)
			return
		}

		c := newCompletion(d, h, req, reqID, s.cfg.AnswerWords)
		c.cacheRead, c.cacheWrite = g.read, g.written
		a := &admission{s: s, h: h}
		defer a.release(0, false) // a no-op unless something panicked

		f, cut := s.pickFault(h, g.attempt, len(c.chunks))
		if s.failAtOnce(w, d, reqID, a, f, req.stream) {
			return
		}
		if req.stream {
			s.stream(r.Context(), w, d, c, a, f, cut)
		} else {
			s.plain(r.Context(), w, d, c, a)
		}
	}
}

// check parses a request and applies the refusals that come before any
// limit (outage, key, body, spend cap, the day's quota), counting each in
// Stats as it refuses.
func (s *Server) check(r *http.Request, d dialect, body []byte) (*request, *apiError) {
	if s.cfg.Outage {
		s.bump(&s.stats.ServerErrors)
		return nil, errOutage()
	}
	if s.cfg.APIKey != "" {
		if sent := sentKey(r); sent != s.cfg.APIKey {
			s.bump(&s.stats.Unauthorized)
			return nil, errAuth(sent)
		}
	}
	req, aerr := d.parse(body)
	if aerr != nil {
		s.bump(&s.stats.BadRequests)
		return nil, aerr
	}
	if req.model == "" {
		req.model = defaultModel
	}
	if aerr := s.modelRuleError(d, body, req.model); aerr != nil {
		if aerr.status == 404 {
			s.bump(&s.stats.NotFound)
		} else {
			s.bump(&s.stats.BadRequests)
		}
		return nil, aerr
	}
	req.capCharge = s.capCharge(d, req)
	req.shape = parseShape(d.tag(), body)
	if s.cfg.SpendCap {
		s.bump(&s.stats.SpendCapped)
		return nil, errQuota()
	}
	s.mu.Lock()
	dayRefusal := s.admitDay(s.now(), req.model)
	s.mu.Unlock()
	if dayRefusal != nil {
		return nil, dayRefusal
	}
	return req, nil
}

// granted is what admission gave a request: its cached input tokens read and
// written, and how many times this body was admitted before (faults are
// chosen per body and attempt).
type granted struct {
	read, written, attempt int
}

// grant admits req against the limits under one lock, so the prompt-cache
// lookup, the charge and the cache store agree: cache reads do not count
// toward Anthropic's ITPM, and a refused request stores nothing.
func (s *Server) grant(h [32]byte, req *request) (granted, *apiError) {
	s.mu.Lock()
	read := s.cacheLookup(req)
	charged := req.inTokens + req.capCharge
	if req.cacheWrites {
		charged -= read // Anthropic: cache reads do not count toward ITPM
	}
	if e := s.accelRefuse(s.now()); e != nil {
		s.mu.Unlock()
		return granted{}, e
	}
	ref := s.admit(s.now(), charged)
	g := granted{read: read}
	if ref == nil {
		s.stats.InputTokens -= int64(req.capCharge) // a charge, not input
		s.accelAdmitted()
		bs := s.body(h)
		g.attempt = int(bs.admitted)
		bs.admitted++
		s.setBody(h, bs)
		g.written = s.cacheStore(req, read)
		s.stats.CacheReadTokens += int64(read)
		s.stats.CacheWriteTokens += int64(g.written)
	}
	s.mu.Unlock()
	if ref != nil {
		return granted{}, errRateLimited(ref, req.model, req.inTokens)
	}
	return g, nil
}

// failAtOnce answers the faults that strike before the first byte (a
// mid-stream fault on a plain request is a 500, a reset is a reset) and
// reports whether it did; it releases the admission before answering.
func (s *Server) failAtOnce(w http.ResponseWriter, d dialect, reqID string, a *admission, f fault, stream bool) bool {
	var counter *int64
	var e *apiError
	switch {
	case f == faultOverload:
		counter, e = &s.stats.Overloaded, errOverloaded()
	case f == faultServer:
		counter, e = &s.stats.ServerErrors, errServer()
	case f == faultMidStream && !stream:
		counter, e = &s.stats.MidStream, errServer()
	case f == faultReset && !stream:
		counter = &s.stats.Resets
	default:
		return false
	}
	a.release(0, false)
	s.bump(counter)
	if e == nil {
		resetConn(w)
	} else {
		s.fail(w, d, reqID, e)
	}
	return true
}

// admission is one admitted request until it is released.
type admission struct {
	s        *Server
	h        [32]byte
	released bool
	dup      bool // the release counted a duplicate completion
}

// release ends the admission once: it frees the concurrency slot, charges
// the output tokens actually generated and, with done, counts the
// completion. The handlers call it before writing their last bytes, so a
// client that has seen the end of an answer (or of a failure) also sees it
// in Stats and can start its next request without hitting the concurrency
// limit.
func (a *admission) release(out int, done bool) {
	if a.released {
		return
	}
	a.released = true
	a.dup = a.s.release(a.h, out, done)
}

// undo reverts a release with done whose last write then failed: the
// answer counts as canceled instead.
func (a *admission) undo() {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Completed--
	s.stats.Canceled++
	if a.dup {
		s.stats.Duplicates--
	} else {
		bs := s.body(a.h)
		bs.done = false
		s.setBody(a.h, bs)
	}
}

// arrive records a request for body hash h and returns its request id,
// derived from h and the number of earlier requests with that body.
func (s *Server) arrive(h [32]byte) string {
	s.mu.Lock()
	bs := s.body(h)
	n := bs.arrivals
	bs.arrivals++
	s.setBody(h, bs)
	s.mu.Unlock()
	var buf [40]byte
	copy(buf[:], h[:])
	binary.LittleEndian.PutUint64(buf[32:], uint64(n))
	sum := sha256.Sum256(buf[:])
	return "req_" + hex.EncodeToString(sum[:16])
}

// release ends an admitted request: it charges the output tokens actually
// generated and, for a completed answer, counts the completion, reporting
// whether it was a duplicate.
func (s *Server) release(h [32]byte, out int, done bool) (dup bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out != nil {
		s.out.advance(now)
		s.out.level -= float64(out)
	}
	s.stats.OutputTokens += int64(out)
	s.inFlight--
	s.stats.InFlight = s.inFlight
	if done {
		s.stats.Completed++
		dup = s.completed(h)
	}
	return dup
}

// fail writes an error answer with the rate-limit headers.
func (s *Server) fail(w http.ResponseWriter, d dialect, reqID string, e *apiError) {
	s.writeLimitHeaders(w, d)
	h := w.Header()
	if s.cfg.NoRetryAfter {
		e.retryAfter = 0 // nor in the body (Azure's "Please retry after N seconds.", Gemini's RetryInfo)
	}
	_, bodyHint := d.(interface{ noRetryHeaders() })
	if e.retryAfter > 0 && !bodyHint {
		h.Set("retry-after", strconv.FormatInt(int64(math.Ceil(e.retryAfter.Seconds())), 10))
		h.Set("retry-after-ms", strconv.FormatInt(int64(math.Ceil(float64(e.retryAfter)/float64(time.Millisecond))), 10))
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(d.errorStatus(e))
	w.Write(d.errorBody(e, reqID))
}

func (s *Server) writeLimitHeaders(w http.ResponseWriter, d dialect) {
	if s.cfg.NoLimitHeaders {
		return
	}
	now := s.now()
	s.mu.Lock()
	l := s.limitsAt(now)
	s.mu.Unlock()
	d.setLimitHeaders(w.Header(), l, now)
	s.writeDayHeaders(w.Header(), now)
}

// sentKey returns the credential of r: x-api-key, api-key (Azure) or
// x-goog-api-key (Gemini), else the Bearer token, else Gemini's ?key=.
func sentKey(r *http.Request) string {
	if k := r.Header.Get("x-api-key"); k != "" {
		return k
	}
	if k := r.Header.Get("api-key"); k != "" {
		return k
	}
	if k := r.Header.Get("x-goog-api-key"); k != "" {
		return k
	}
	if k := r.URL.Query().Get("key"); k != "" && strings.HasPrefix(r.URL.Path, geminiPrefix) {
		return k
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// bodyHash identifies a request body regardless of its stream flags and
// key order: the SHA-256 of the format tag and the body re-encoded with
// "stream" and "stream_options" removed (the raw bytes when it is not a
// JSON object). A streamed and a plain request for the same thing hash
// alike, so they get the same answer ids and count as duplicates.
func bodyHash(tag byte, body []byte) [32]byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil && m != nil {
		delete(m, "stream")
		delete(m, "stream_options")
		if b, err := json.Marshal(m); err == nil {
			body = b
		}
	}
	hh := sha256.New()
	hh.Write([]byte{tag})
	hh.Write(body)
	var sum [32]byte
	hh.Sum(sum[:0])
	return sum
}

// newCompletion builds the answer to req. Everything in it follows from the
// body hash and the prompt.
func newCompletion(d dialect, h [32]byte, req *request, reqID string, words int) *completion {
	text, truncated := req.shape.text(answer(req.prompt, req.maxTokens, words))
	c := &completion{
		shape:        req.shape,
		model:        req.model,
		reqID:        reqID,
		created:      1735689600 + int64(binary.LittleEndian.Uint32(h[16:20])%31536000),
		text:         text,
		truncated:    truncated,
		inTokens:     req.inTokens,
		outTokens:    CountTokens(text),
		includeUsage: req.includeUsage,
	}
	if d.tag() == 'a' {
		c.id = "msg_01mock" + hex.EncodeToString(h[:10])
	} else {
		c.id = "chatcmpl-mock" + hex.EncodeToString(h[:10])
	}
	if req.embed != nil { // vectors, no output tokens, nothing to stream
		c.embed, c.text, c.outTokens = req.embed, "", 0
		return c
	}
	// Stream 1 to 3 tokens per event.
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[20:28]), 0x6d6f636b))
	ps := pieces(text)
	for len(ps) > 0 {
		n := min(1+rng.IntN(3), len(ps))
		c.chunks = append(c.chunks, chunk{text: strings.Join(ps[:n], ""), n: n})
		ps = ps[n:]
	}
	return c
}

// fault is an injected failure.
type fault uint8

const (
	faultNone fault = iota
	faultOverload
	faultMidStream
	faultReset
	faultServer
)

// pickFault decides the fault of the attempt-th admitted attempt of body h
// and, for stream faults, after how many content events it strikes
// (1..max(1, chunks-1)).
func (s *Server) pickFault(h [32]byte, attempt, chunks int) (fault, int) {
	x := splitmix(binary.LittleEndian.Uint64(h[:8]) ^ splitmix(uint64(s.cfg.Seed)))
	y := splitmix(binary.LittleEndian.Uint64(h[8:16]) ^ splitmix(uint64(attempt)+0x9e3779b97f4a7c15))
	rng := rand.New(rand.NewPCG(x, y))
	u := rng.Float64()
	cut := 1 + rng.IntN(max(1, chunks-1))
	for _, f := range []struct {
		rate float64
		f    fault
	}{
		{s.cfg.OverloadRate, faultOverload},
		{s.cfg.MidStreamRate, faultMidStream},
		{s.cfg.ResetRate, faultReset},
		{s.cfg.ServerErrorRate, faultServer},
	} {
		if u < f.rate {
			return f.f, cut
		}
		u -= f.rate
	}
	return faultNone, 0
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// resetConn closes the client connection abruptly: hijacked and closed with
// SO_LINGER 0, so the peer sees a TCP RST. Where hijacking is impossible
// (HTTP/2), it aborts the handler instead.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// plain writes a non-streaming answer after TokenDelay per output token.
func (s *Server) plain(ctx context.Context, w http.ResponseWriter, d dialect, c *completion, a *admission) {
	if !ctxsleep.For(ctx, s.cfg.TokenDelay*time.Duration(c.outTokens)) {
		a.release(0, false)
		s.bump(&s.stats.Canceled)
		return
	}
	s.writeLimitHeaders(w, d)
	w.Header().Set("Content-Type", "application/json")
	body := c.shape.reshape(d.tag(), d.plainBody(c), c)
	a.release(c.outTokens, true)
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(body); err != nil {
		a.undo()
	}
}

// stream writes a streaming answer, flushing every event, waiting
// TokenDelay per token and stopping as soon as the client is gone. f is the
// attempt's fault (faultMidStream and faultReset strike after cut content
// events).
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, d dialect, c *completion, a *admission, f fault, cut int) {
	s.writeLimitHeaders(w, d)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	sent := 0 // bytes of text sent
	gone := func() {
		a.release(CountTokens(c.text[:sent]), false)
		s.bump(&s.stats.Canceled)
	}
	buf := d.streamStart(make([]byte, 0, 512), c)
	if !send(buf) {
		gone()
		return
	}
	for i, ch := range c.chunks {
		if !ctxsleep.For(ctx, s.cfg.TokenDelay*time.Duration(ch.n)) {
			gone()
			return
		}
		if !send(d.streamDelta(buf[:0], c, ch.text)) {
			gone()
			return
		}
		sent += len(ch.text)
		if i+1 != cut {
			continue
		}
		switch f {
		case faultMidStream:
			a.release(CountTokens(c.text[:sent]), false)
			s.bump(&s.stats.MidStream)
			send(d.streamError(buf[:0], c))
			return
		case faultReset:
			a.release(CountTokens(c.text[:sent]), false)
			s.bump(&s.stats.Resets)
			resetConn(w)
			return
		}
	}
	buf = d.streamFinish(buf[:0], c)
	a.release(c.outTokens, true)
	if !send(buf) {
		a.undo()
	}
}

// part is one block of a message content (or of a system prompt): its
// text ("" for blocks that are not text), the block itself for hashing,
// and whether it carries cache_control.
type part struct {
	text   string
	isText bool
	raw    json.RawMessage
	cache  bool
}

// contentParts returns the blocks of a message content: a string is one
// text block; null is none.
func contentParts(raw json.RawMessage) ([]part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return []part{{text: s, isText: true}}, err
	case '[':
		var blocks []json.RawMessage
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return nil, err
		}
		parts := make([]part, len(blocks))
		for i, b := range blocks {
			var p struct {
				Type         string          `json:"type"`
				Text         string          `json:"text"`
				CacheControl json.RawMessage `json:"cache_control"`
			}
			if err := json.Unmarshal(b, &p); err != nil {
				return nil, err
			}
			parts[i] = part{raw: b, cache: len(p.CacheControl) > 0 && string(p.CacheControl) != "null"}
			if p.Type == "text" || p.Type == "input_text" {
				parts[i].text, parts[i].isText = p.Text, true
			}
		}
		return parts, nil
	}
	return nil, fmt.Errorf("content must be a string or an array of parts")
}

// textLen is the length of the text parts of parts joined with "\n".
func textLen(parts []part) int {
	n, k := 0, 0
	for _, p := range parts {
		if p.isText {
			n += len(p.text)
			k++
		}
	}
	return n + max(k-1, 0)
}

// contentText returns the text of a message content: a string, or the
// text parts of a parts array joined with "\n". null is "".
func contentText(raw json.RawMessage) (string, error) {
	parts, err := contentParts(raw)
	var texts []string
	for _, p := range parts {
		if p.isText {
			texts = append(texts, p.text)
		}
	}
	return strings.Join(texts, "\n"), err
}
