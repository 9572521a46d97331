package source

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/internal/jsonvalid"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
)

// InputError is a problem with the input file, found before anything is
// sent. It names the file and line (and, for a duplicate id, the first line).
type InputError struct {
	Path      string
	Line      int
	FirstLine int // for duplicate custom_ids: where the id first appeared
	Msg       string
}

func (e *InputError) Error() string {
	if e.FirstLine > 0 {
		return fmt.Sprintf("%s:%d: %s (first seen at %s:%d)", e.Path, e.Line, e.Msg, e.Path, e.FirstLine)
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// LineDefaults fill in what simple lines (and bodies without them) leave out.
type LineDefaults struct {
	Model     string
	MaxTokens int
	System    string
	// Priority is the priority of lines without a priority field.
	Priority int
}

// maxLine bounds one input line; a longer one is an input error, not an
// out-of-memory kill.
const maxLine = 64 << 20

// Parser turns input lines into provider-shaped requests.
type Parser struct {
	// Format is the wire format of the provider the requests go to.
	Format   providers.Format
	Defaults LineDefaults
	// LossyUTF8 replaces invalid UTF-8 with U+FFFD instead of rejecting
	// the line (--lossy-utf8).
	LossyUTF8 bool
	// Template, if set, makes every line a record of fields that it
	// renders into the prompt of a simple line (--template).
	Template *Template
	// Models say which model lines are sent as and apply the model
	// families' rules (source_rules.go).
	Models ModelRules
}

// Parse parses one non-blank input line (lineNo is 1-based). It accepts the
// OpenAI batch shape {custom_id, method, url, body}, the Anthropic batch shape
// {custom_id, params}, Gemini's batch shape {key, request} and the simple
// shape {custom_id?, prompt, system?, model?, max_tokens?}, and translates
// bodies to p.Format when needed.
func (p *Parser) Parse(line []byte, lineNo int) (*providers.Request, error) {
	req, _, err := p.parse(line, lineNo)
	return req, err
}

// parse is Parse that also reports whether invalid UTF-8 was replaced.
func (p *Parser) parse(line []byte, lineNo int) (_ *providers.Request, repaired bool, err error) {
	// Checked before anything decodes the line: gjson and the JSON encoders
	// would each silently turn invalid bytes into U+FFFD, and a body passed
	// through would reach the provider as it is.
	if !utf8.Valid(line) {
		if !p.LossyUTF8 {
			return nil, false, fmt.Errorf("invalid UTF-8 at byte %d (fix the input, or pass --lossy-utf8 to replace it with U+FFFD)", invalidUTF8At(line)+1)
		}
		line, repaired = bytes.ToValidUTF8(line, []byte("\uFFFD")), true
	}
	req, err := p.parseValid(line, lineNo)
	return req, repaired, err
}

// invalidUTF8At is the offset of the first byte of b that is not valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// lineFields are the top-level members of an input line that Parse reads,
// gathered in one pass over the line: each root.Get of a member the line
// lacks would read the whole line again. The first of repeated keys counts,
// as with gjson's Get.
type lineFields struct {
	id, key, method, url, prompt, system, model, maxTokens, priority, tags gjson.Result
	// shapes are the line shapes the formats claim (registry.Lines), and
	// shaped the member each names as its request.
	shapes registry.LineShapes
	shaped [len(registry.LineShapes{})]gjson.Result
}

// read fills f from root's members.
func (f *lineFields) read(root gjson.Result) {
	f.shapes = registry.Lines()
	root.ForEach(func(k, v gjson.Result) bool {
		var dst *gjson.Result
		switch k.Str {
		case "custom_id":
			dst = &f.id
		case "key":
			dst = &f.key
		case "method":
			dst = &f.method
		case "url":
			dst = &f.url
		case "prompt":
			dst = &f.prompt
		case "system":
			dst = &f.system
		case "model":
			dst = &f.model
		case "max_tokens":
			dst = &f.maxTokens
		case "priority":
			dst = &f.priority
		case "tags":
			dst = &f.tags
		default:
			if dst = f.shapeMember(k.Str); dst == nil {
				return true
			}
		}
		if !dst.Exists() {
			*dst = v
		}
		return true
	})
}

func (p *Parser) parseValid(line []byte, lineNo int) (*providers.Request, error) {
	// One pass validates the line and finds a repeated key: llmrun reads
	// the first of them, servers the last, so the estimate, the price or
	// the duplicate check would read a value the server never sees.
	dup, ok := jsonvalid.DuplicateKey(line)
	if !ok {
		return nil, errors.New("not valid JSON")
	}
	if dup != "" {
		return nil, fmt.Errorf("key %q appears twice (llmrun would read the first, the server the last): give each key once", dup)
	}
	root := gjson.ParseBytes(line)
	if !root.IsObject() {
		return nil, errors.New("not a JSON object")
	}
	var f lineFields
	f.read(root)
	req := &providers.Request{Line: lineNo, Priority: p.Defaults.Priority}
	if p.Template == nil {
		if err := linePriority(f.priority, req); err != nil {
			return nil, err
		}
		if err := lineTags(f.tags, req); err != nil {
			return nil, err
		}
	}
	id, err := f.customID(lineNo)
	if err != nil {
		return nil, err
	}
	req.ID = id
	body, from, err := p.wireBody(line, &f, req)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return p.simple(req, &f)
	}
	return p.finish(req, body, from)
}

// shapeMember is where f keeps the member called key if a line shape
// names it as its request, else nil.
func (f *lineFields) shapeMember(key string) *gjson.Result {
	for i := range f.shapes {
		if f.shapes[i].Key == key {
			return &f.shaped[i]
		}
	}
	return nil
}

// customID is a line's custom_id (Gemini's batch lines: key), or line-N
// when it names none.
func (f *lineFields) customID(lineNo int) (string, error) {
	idv := f.id
	if !idv.Exists() {
		idv = f.key // Gemini's batch lines name their request "key"
	}
	switch {
	case !idv.Exists() || idv.Type == gjson.Null:
		return "line-" + strconv.Itoa(lineNo), nil
	case idv.Type == gjson.String && idv.Str != "":
		return idv.Str, nil
	default:
		return "", errors.New("custom_id (or key) must be a non-empty string")
	}
}

// wireBody is the request body a line carries (or its template renders)
// and the format it is written in; a nil body with no error means a
// simple line, whose prompt field p.simple reads.
func (p *Parser) wireBody(line []byte, f *lineFields, req *providers.Request) ([]byte, providers.Format, error) {
	if p.Template != nil {
		// The line is a record whose fields fill the template; the result
		// is the prompt of a simple line with the flags' defaults.
		text, err := p.Template.render(line)
		if err != nil {
			return nil, 0, err
		}
		sp := providers.Prompt{Prompt: text, System: p.Defaults.System, Model: p.Defaults.Model, MaxTokens: p.Defaults.MaxTokens}
		body, err := p.buildSimple(&sp)
		if err != nil {
			return nil, 0, err
		}
		req.Vars = bytes.Clone(line)
		return body, p.Format, nil
	}
	var held registry.Held
	for i, v := range f.shaped {
		held[i] = providers.Present(v)
	}
	if i, err := registry.ShapeIn(held); err != nil {
		return nil, 0, err
	} else if i >= 0 {
		if err := f.simpleBeside(f.shapes[i]); err != nil {
			return nil, 0, err
		}
		return shapeBody(f.shapes[i], f.shaped[i], f, req)
	}
	if f.prompt.Exists() {
		return nil, 0, f.simpleEndpoint()
	}
	return nil, 0, errors.New(f.noBody())
}

// shapeBody is the request of a line in shape sh, v the member holding
// it, and the endpoint the line's other members say it is for.
func shapeBody(sh providers.LineShape, v gjson.Result, f *lineFields, req *providers.Request) ([]byte, providers.Format, error) {
	if !v.IsObject() {
		return nil, 0, errors.New(sh.Key + " must be a JSON object")
	}
	if sh.Endpoint != nil {
		ep, err := sh.Endpoint(providers.LineMembers{Method: f.method, URL: f.url, Request: v})
		if err != nil {
			return nil, 0, err
		}
		req.Endpoint = ep
	}
	return []byte(v.Raw), sh.Format, nil
}

// noBody is the message of a line with neither a prompt nor a request in
// any shape: "line has no prompt, body, params or request".
func (f *lineFields) noBody() string {
	msg := "line has no prompt"
	for i, sh := range f.shapes {
		if i == len(f.shapes)-1 {
			msg += " or "
		} else {
			msg += ", "
		}
		msg += sh.Key
	}
	return msg
}

// finish checks body in the line's own format, translates it to the
// provider's, fills the flags' defaults, checks it again and sets req's
// body, model and max tokens from the result.
func (p *Parser) finish(req *providers.Request, body []byte, from providers.Format) (*providers.Request, error) {
	// Checked in the line's own shape: translating an Anthropic request
	// that has only a system prompt would make a messages array of it.
	if err := checkBody(body, req.Endpoint, from); err != nil {
		return nil, err
	}
	if from != p.Format {
		var err error
		if body, req.Endpoint, err = providers.TranslateEndpoint(body, from, req.Endpoint, p.Format); err != nil {
			return nil, fmt.Errorf("translating %s request to %s: %w", from, p.Format, err)
		}
	}
	body, err := p.fillDefaults(body)
	if err == nil {
		body, err = p.applyRules(body, req.Endpoint)
	}
	if err != nil {
		return nil, err
	}
	req.Body = body
	req.Model = gjson.GetBytes(body, "model").String()
	req.MaxTokens = providers.MaxTokensOf(body)
	if err := checkBody(body, req.Endpoint, p.Format); err != nil {
		return nil, err
	}
	return req, nil
}

// linePriority reads a line's top-level priority field v into req: an
// integer, or high, normal or low (see limiter.ParsePriority). A
// template's records are not read: their fields are the prompt's.
func linePriority(v gjson.Result, req *providers.Request) error {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return nil
	case v.Type == gjson.Number && v.Num == math.Trunc(v.Num) && v.Num >= limiter.MinPriority && v.Num <= limiter.MaxPriority:
		req.Priority = int(v.Num)
		return nil
	case v.Type == gjson.String:
		if p, err := limiter.ParsePriority(v.Str); err == nil {
			req.Priority = p
			return nil
		}
	}
	return fmt.Errorf("priority must be an integer from %d to %d, or \"high\", \"normal\" or \"low\", not %s", limiter.MinPriority, limiter.MaxPriority, v.Raw)
}

// simple finishes req from a simple line {prompt, system?, model?,
// max_tokens?}. The body is built here in the format it is sent in, with
// its model set and (Anthropic) its max_tokens, and one user message of a
// non-empty prompt, so none of what parseValid does to other bodies
// (translation, defaults, the conversation checks) applies; its model and
// cap are known without reading the body again.
func (p *Parser) simple(req *providers.Request, f *lineFields) (*providers.Request, error) {
	pr := f.prompt
	if pr.Type != gjson.String || pr.Str == "" {
		return nil, errors.New("prompt must be a non-empty string")
	}
	sp := providers.Prompt{
		Prompt:    pr.Str,
		System:    p.Defaults.System,
		Model:     p.Defaults.Model,
		MaxTokens: p.Defaults.MaxTokens,
	}
	if v := f.system; v.Exists() {
		sp.System = v.String()
	}
	if v := f.model; v.Exists() {
		sp.Model = v.String()
	}
	if v := f.maxTokens; v.Exists() {
		if v.Type != gjson.Number || v.Int() <= 0 {
			return nil, errors.New("max_tokens must be a positive integer")
		}
		sp.MaxTokens = int(v.Int())
	}
	var err error
	if req.Body, err = p.buildSimple(&sp); err != nil {
		return nil, err
	}
	req.Model = sp.Model
	if sp.MaxTokens > 0 {
		req.MaxTokens = sp.MaxTokens
	}
	return req, nil
}

// checkBody rejects a body its endpoint would answer with a 400 for want
// of what it is about (see providers.CheckBody).
func checkBody(body []byte, ep providers.Endpoint, f providers.Format) error {
	return providers.CheckBody(body, ep, f)
}

// buildSimple builds the body of a simple line's prompt, setting in sp
// the max tokens a format may require (Anthropic's).
func (p *Parser) buildSimple(sp *providers.Prompt) ([]byte, error) {
	if sp.Model == "" {
		return nil, errors.New("no model: give the line a model or pass --model")
	}
	if err := p.shapeSimple(sp); err != nil {
		return nil, err
	}
	if sp.MaxTokens == 0 {
		sp.MaxTokens = p.Format.RequiredMaxTokens()
	}
	return sp.Build(p.Format)
}

// defaultAnthropicMaxTokens is the cap Anthropic's Messages API, which
// requires one, gets when nothing sets it (providers.Format.RequiredMaxTokens).
const defaultAnthropicMaxTokens = providers.DefaultMaxTokens

func (p *Parser) fillDefaults(body []byte) ([]byte, error) {
	var err error
	if m := gjson.GetBytes(body, "model"); !m.Exists() || m.Str == "" {
		if p.Defaults.Model == "" {
			return nil, errors.New("no model: give the request a model or pass --model")
		}
		if body, err = sjson.SetBytes(body, "model", p.Defaults.Model); err != nil {
			return nil, err
		}
	}
	if req := p.Format.RequiredMaxTokens(); req > 0 && !gjson.GetBytes(body, "max_tokens").Exists() { // Messages requires it
		mt := p.Defaults.MaxTokens
		if mt == 0 {
			mt = req
		}
		if body, err = sjson.SetBytes(body, "max_tokens", mt); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// lineReader yields the non-blank lines of a file with their numbers,
// streaming: memory stays bounded by the longest line.
type lineReader struct {
	r    *bufio.Reader
	n    int
	buf  []byte
	path string
}

func newLineReader(r io.Reader, path string, size int) *lineReader {
	br := bufio.NewReaderSize(r, size)
	// A leading byte order mark (editors on Windows write one) is not part
	// of the first line's JSON.
	if b, err := br.Peek(len(utf8BOM)); err == nil && bytes.Equal(b, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	return &lineReader{r: br, path: path}
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// next returns the next non-blank line (valid until the following call) and
// its 1-based number, or io.EOF.
func (lr *lineReader) next() ([]byte, int, error) {
	for {
		lr.buf = lr.buf[:0]
		for {
			chunk, err := lr.r.ReadSlice('\n')
			lr.buf = append(lr.buf, chunk...)
			if len(lr.buf) > maxLine {
				return nil, lr.n + 1, &InputError{Path: lr.path, Line: lr.n + 1, Msg: fmt.Sprintf("line longer than %d MiB", maxLine>>20)}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err == io.EOF {
				if len(lr.buf) == 0 {
					return nil, lr.n, io.EOF
				}
				break
			}
			var de *decodeError
			if errors.As(err, &de) {
				return nil, lr.n + 1, &InputError{Path: lr.path, Line: lr.n + 1, Msg: de.Error()}
			}
			if err != nil {
				return nil, lr.n, fmt.Errorf("reading %s: %w", lr.path, err)
			}
			break
		}
		lr.n++
		line := bytes.TrimSpace(lr.buf)
		if len(line) > 0 {
			return line, lr.n, nil
		}
	}
}

// Source reads requests from a JSONL input: a file, or "-" for standard
// input. The input is read twice, once by Check and once by Each (or the
// offline route), so Open keeps it where both passes see the same bytes: a
// regular file stays open and is read by position; anything that cannot be
// read twice (a pipe, a FIFO, /dev/stdin, "-") is first copied to a spool
// file in SpoolDir.
type Source struct {
	// Path names the input; "-" reads Stdin.
	Path   string
	Parser Parser
	// Validate, if set, checks each request during Check (see FitsLimits).
	Validate func(*providers.Request) error
	// Shard, if set, keeps only the requests of one shard (see Shard).
	Shard Shard
	// Route, if set, is the route the requests go to first: Check then
	// sums up their fingerprints for it (a checkpoint.InputSet), so that a
	// run whose output already answers them all skips them without reading
	// the input again.
	Route *Route
	// Format is how records are written: JSONL (the zero value) or CSV.
	Format InputFormat
	// Stdin is what Path "-" reads.
	Stdin io.Reader
	// SpoolDir is where a non-seekable input is spooled: beside the output,
	// where the user chose to have room, rather than a temporary directory
	// that may be memory. Empty means the system's temporary directory.
	SpoolDir string

	// f is the open input: the regular file itself, or the spool. Reads
	// start at base (standard input redirected from a file may start inside it).
	f         *os.File
	base      int64
	spooled   bool
	spoolName string // set when the spool could not be unlinked at once
	// seen is what the check pass read; later passes are verified against it.
	seen *digest
	// set sums up the checked requests for the route whose part of the
	// fingerprint hashes to setRoute (see Route); hasSet says it is whole.
	set      checkpoint.InputSet
	setRoute uint64
	hasSet   bool
	// idHash, if set, replaces the id hash (tests force collisions with it).
	idHash func(string) uint64
	// checkWorkers, if positive, replaces the number of goroutines the
	// check pass parses on (one per CPU, up to maxCheckWorkers); 1 parses
	// in line (tests compare the two).
	checkWorkers int
	// afterScan, if set, runs when the check has read the whole input, with
	// what it keeps per request still live and the bytes of it it holds
	// outside the Go heap (for the memory benchmark).
	afterScan func(offHeap int)
}

// name is the input as messages show it.
func (s *Source) name() string {
	if s.Path == "-" {
		return "stdin"
	}
	return s.Path
}

func (s *Source) inputErr(line int, msg string) *InputError {
	return &InputError{Path: s.name(), Line: line, Msg: msg}
}

// Open opens the input for the passes and spools it if it cannot be read
// twice. Check and Each call it if the caller has not; Close releases it.
//
// The spool is unlinked as soon as it is created, so it takes no name on
// disk and its space returns when the process exits, however it exits. It
// is not kept for resume: a rerun reads its input again (the same pipe
// command), and what was done is found in the output, by custom_id.
func (s *Source) Open() error {
	if s.f != nil {
		return nil
	}
	var src io.Reader
	if s.Path == "-" {
		if s.Stdin == nil {
			return s.inputErr(0, "no standard input")
		}
		if f, ok := s.Stdin.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				if off, err := f.Seek(0, io.SeekCurrent); err == nil {
					s.f, s.base = f, off // redirected from a file: read it in place
					return nil
				}
			}
		}
		src = s.Stdin
	} else {
		// Opening a FIFO waits for its writer, as any reader of it would.
		f, err := os.Open(s.Path)
		if err != nil {
			return s.inputErr(0, openErrMsg(err))
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return s.inputErr(0, err.Error())
		}
		switch {
		case fi.IsDir():
			f.Close()
			return s.inputErr(0, "is a directory")
		case fi.Mode().IsRegular():
			s.f = f
			return nil
		}
		defer f.Close()
		src = f
	}
	sp, unlinked, err := spool(src, s.SpoolDir)
	if err != nil {
		return s.inputErr(0, fmt.Sprintf("cannot be read twice and could not be spooled to %s: %v", cmp.Or(s.SpoolDir, os.TempDir()), err))
	}
	s.f, s.spooled = sp, true
	if !unlinked {
		s.spoolName = sp.Name()
	}
	return nil
}

// openErrMsg drops the path os.Open repeats, since InputError names it.
func openErrMsg(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// spool copies r to a new file in dir and returns it, unlinked where the
// system allows (Unix); elsewhere unlinked is false and Close removes it.
func spool(r io.Reader, dir string) (f *os.File, unlinked bool, err error) {
	if f, err = os.CreateTemp(dir, ".llmrun-spool-*"); err != nil {
		return nil, false, err
	}
	unlinked = os.Remove(f.Name()) == nil
	if _, err = io.Copy(f, r); err != nil {
		f.Close()
		if !unlinked {
			os.Remove(f.Name())
		}
		return nil, false, err
	}
	return f, unlinked, nil
}

// Spooled reports whether Open copied the input to a spool file.
func (s *Source) Spooled() bool { return s.spooled }

// Close releases the input (and with it the spool's disk space).
func (s *Source) Close() error {
	if s.f == nil || s.f == s.Stdin {
		return nil
	}
	err := s.f.Close()
	if s.spoolName != "" {
		os.Remove(s.spoolName)
	}
	s.f = nil
	return err
}

// firstLine returns a copy of the input's first non-blank line (nil if it
// has none) and its 1-based number, without consuming an input that cannot
// be read twice.
func (s *Source) firstLine() ([]byte, int, error) {
	r, err := s.open()
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	line, n, err := newLineReader(r, s.name(), s.lineBufSize()).next()
	if err == io.EOF {
		return nil, 0, nil
	}
	return bytes.Clone(line), n, err
}

// lineBufSize is the read buffer of a pass over s: 256 KiB, or the file's
// size (at least 4 KiB) when it is smaller. A longer line still reads
// whole (lineReader gathers the chunks); a small input's three passes
// were 768 KB of a one-request run's ~3 MB start-up allocation, enough to
// make it run the collector once.
func (s *Source) lineBufSize() int {
	const most = 256 << 10
	if s.f == nil {
		return most
	}
	fi, err := s.f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return most
	}
	return int(min(max(fi.Size()-s.base+1, 4<<10), most))
}

// open starts one pass over the input's content (decompressed) from its
// beginning.
func (s *Source) open() (io.ReadCloser, error) {
	if err := s.Open(); err != nil {
		return nil, err
	}
	r, err := decompress(io.NewSectionReader(s.f, s.base, math.MaxInt64-s.base), s.Path)
	if err != nil {
		return nil, s.inputErr(0, err.Error())
	}
	return r, nil
}

// pass is one pass's reader over the content, and what closes its decoder.
type pass struct {
	io.Reader
	io.Closer
}

// openChecked starts the check pass, recording what it reads in d.
func (s *Source) openChecked(d *digest) (io.ReadCloser, error) {
	r, err := s.open()
	if err != nil {
		return nil, err
	}
	if d.stamp, err = stampOf(s.f); err != nil {
		r.Close()
		return nil, s.inputErr(0, err.Error())
	}
	return pass{newRecorder(r, d), r}, nil
}

// openVerified starts a pass after the check: it fails at once if the
// file's size or time changed, and its reader hands on only chunks of
// content that match what the check read.
func (s *Source) openVerified() (io.ReadCloser, error) {
	r, err := s.open()
	if err != nil || s.seen == nil {
		return r, err
	}
	if how := s.changedHow(); how != "" {
		r.Close()
		return nil, &InputChangedError{Path: s.name(), How: how}
	}
	return pass{newVerifier(r, s.seen), r}, nil
}

// changedHow says how the input's size or time differs from the check's
// ("" if they do not).
func (s *Source) changedHow() string {
	if s.seen == nil {
		return ""
	}
	now, err := stampOf(s.f)
	if err != nil {
		return err.Error()
	}
	return s.seen.stamp.diff(now)
}

// readErr turns an error of a verified pass into an InputChangedError when
// the input changed: a truncated or rewritten input shows as a short line,
// a decompression error or a chunk that differs.
func (s *Source) readErr(err error, last int) error {
	if s.seen == nil {
		return err
	}
	if errors.Is(err, errChanged) {
		return &InputChangedError{Path: s.name(), Line: last, How: errChanged.Error()}
	}
	if how := s.changedHow(); how != "" {
		return &InputChangedError{Path: s.name(), Line: last, How: how}
	}
	return err
}

// Shard splits one input across N machines or processes without
// coordination: shard I of N (1-based) takes the requests whose custom_id
// hashes to I-1 modulo N. Every machine reads the same file and writes its
// own output; together the shards answer every request exactly once. The
// zero Shard takes everything.
type Shard struct{ I, N int }

// ParseShard parses "I/N" with 1 <= I <= N.
func ParseShard(v string) (Shard, error) {
	var sh Shard
	if _, err := fmt.Sscanf(v, "%d/%d", &sh.I, &sh.N); err != nil || sh.N < 1 || sh.I < 1 || sh.I > sh.N || fmt.Sprintf("%d/%d", sh.I, sh.N) != v {
		return Shard{}, fmt.Errorf("--shard wants I/N with 1 <= I <= N, not %q", v)
	}
	return sh, nil
}

// Has reports whether the request with this custom_id belongs to the shard.
func (sh Shard) Has(id string) bool {
	if sh.N <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return int(h.Sum64()%uint64(sh.N)) == sh.I-1
}

// CheckResult is what the validation pass learned.
type CheckResult struct {
	// Requests counts the requests of the source's shard.
	Requests int
	// LossyLines counts the lines whose invalid UTF-8 was replaced
	// (Parser.LossyUTF8); LossyFirst is the first of them.
	LossyLines, LossyFirst int
	// FirstLine is the first line of the shard asking for each endpoint,
	// so a batch API that takes only some can be refused up front.
	FirstLine map[providers.Endpoint]int
}

// Check validates the whole file in one streaming pass before anything is
// sent: every line parses, every id is unique. It keeps 8 bytes per
// request (a hash of its id) and 8 per 64 KiB of input (see digest).
func (s *Source) Check() (CheckResult, error) {
	d := &digest{seed: maphash.MakeSeed()}
	f, err := s.openChecked(d)
	if err != nil {
		return CheckResult{}, err
	}
	defer f.Close()
	ids := newIDSet(d.seed, s.idHash)
	defer ids.release()
	var fps *Fingerprinter
	if s.Route != nil {
		fps = NewFingerprinter(*s.Route)
	}
	s.set, s.hasSet = checkpoint.InputSet{}, false
	var res CheckResult
	err = s.parseAll(s.records(f), fps, func(p parsed) error {
		if p.repaired {
			if res.LossyLines == 0 {
				res.LossyFirst = p.req.Line
			}
			res.LossyLines++
		}
		if s.Validate != nil {
			if err := s.Validate(p.req); err != nil {
				return &InputError{Path: s.name(), Line: p.req.Line, Msg: err.Error()}
			}
		}
		ids.add(p.req.ID)
		if p.inShard {
			if _, ok := res.FirstLine[p.req.Endpoint]; !ok {
				if res.FirstLine == nil {
					res.FirstLine = make(map[providers.Endpoint]int)
				}
				res.FirstLine[p.req.Endpoint] = p.req.Line
			}
			res.Requests++
			if fps != nil {
				s.set.Add(p.req.ID, p.fp)
			}
		}
		return nil
	})
	if err != nil {
		return CheckResult{}, err
	}
	if s.afterScan != nil {
		s.afterScan(8 * ids.len())
	}
	if ids.len() == 0 {
		return CheckResult{}, &InputError{Path: s.name(), Msg: "no requests in file"}
	}
	suspects := ids.suspects()
	if suspects != nil {
		if err := s.duplicate(ids, suspects); err != nil {
			return CheckResult{}, err
		}
	}

	s.seen = d
	if how := s.changedHow(); how != "" {
		s.seen = nil
		return CheckResult{}, &InputChangedError{Path: s.name(), How: how + " while it was being checked"}
	}
	if fps != nil {
		s.setRoute, s.hasSet = fps.route.Sum64(), true
	}
	return res, nil
}

// inputSet returns the sum of the checked requests' fingerprints if Check
// made it for the route fps fingerprints for.
func (s *Source) InputSet(fps *Fingerprinter) (checkpoint.InputSet, bool) {
	if !s.hasSet || s.setRoute != fps.route.Sum64() {
		return checkpoint.InputSet{}, false
	}
	return s.set.WithIDs(s.eachID), true
}

// Each streams the file's requests to fn in file order, stopping at the
// first error fn returns.
func (s *Source) Each(fn func(*providers.Request) error) error {
	return walk(s, func(line []byte, n int) (*providers.Request, string, error) {
		req, err := s.Parser.Parse(line, n)
		if err != nil {
			return nil, "", err
		}
		return req, req.ID, nil
	}, func(req *providers.Request) (bool, error) { return true, fn(req) })
}

// walk reads the checked input again in file order and hands fn what read
// makes of each line of the source's shard (read also says the line's
// custom_id), until fn says stop or fails. A line read refuses is an
// InputError naming the file and line.
func walk[T any](s *Source, read func(line []byte, n int) (T, string, error), fn func(T) (bool, error)) error {
	f, err := s.openVerified()
	if err != nil {
		return err
	}
	defer f.Close()
	lr := s.records(f)
	last := 0
	for {
		line, n, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return s.readErr(err, last)
		}
		v, id, err := read(line, n)
		if err != nil {
			return s.readErr(&InputError{Path: s.name(), Line: n, Msg: err.Error()}, last)
		}
		last = n
		if !s.Shard.Has(id) {
			continue
		}
		if more, err := fn(v); err != nil || !more {
			return err
		}
	}
}
