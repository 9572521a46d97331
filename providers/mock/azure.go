package mock

import (
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Azure OpenAI's dialect of the OpenAI format (wire-formats §6), served
// under /openai:
//
//	POST /openai/deployments/{dep}/chat/completions?api-version=V   classic: the deployment in the path
//	POST /openai/v1/chat/completions                                v1: the deployment in the body's model
//	POST /openai/responses?api-version=V, /openai/v1/responses      the Responses API, deployment in model
//	POST /openai/deployments/{dep}/embeddings?api-version=V, /openai/v1/embeddings
//
// and the batch API under /openai/ and /openai/v1/ (OpenAI's routes). Classic
// routes require an api-version query parameter and the api-key header
// (404 and 401 otherwise, as Azure answers); v1 routes take api-key or a
// Bearer token. Bodies are OpenAI's, with Azure's differences: a stream
// opens with a prompt_filter_results chunk, every answer carries content
// filter results, a 429's code is the string "429" with "Please retry
// after N seconds." in its message, and a prompt holding
// ContentFilterTrigger is refused by the content filter (400
// content_filter).

// ContentFilterTrigger in the last user message of an Azure request makes
// the mock's content filter refuse it.
const ContentFilterTrigger = "[content-filter]"

// azure is the dialect; deployment is the path's, the model of a body
// that names none.
type azure struct {
	openAI
	deployment string
}

const (
	azureSafe    = `{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`
	azurePrompt  = `[{"prompt_index":0,"content_filter_results":` + azureSafe + `}]`
	azureNoKey   = "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
	azureVersion = "2024-10-21"
)

func (a azure) parse(body []byte) (*request, *apiError) {
	req, err := a.openAI.parse(body)
	if err != nil {
		return nil, err
	}
	if req.model == "" {
		req.model = a.deployment
	}
	if strings.Contains(req.prompt, ContentFilterTrigger) {
		return nil, &apiError{status: 400, oaCode: "content_filter", oaParam: "prompt",
			message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"}
	}
	return req, nil
}

// errorBody renders Azure's shapes where they differ from OpenAI's: the
// content filter's innererror, the 429 and 401 with a numeric code string
// and no type.
func (a azure) errorBody(e *apiError, reqID string) []byte {
	switch {
	case e.oaCode == "content_filter":
		b := append(make([]byte, 0, 512), `{"error":{"message":`...)
		b = appendString(b, e.message)
		b = append(b, `,"type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":true,"severity":"high"},"violence":{"filtered":false,"severity":"safe"}}}}}`...)
		return b
	case e.status == 429 && e.oaCode == "rate_limit_exceeded":
		b := append(make([]byte, 0, 256), `{"error":{"code":"429","message":`...)
		msg := "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version " + azureVersion + " have exceeded token rate limit of your current OpenAI S0 pricing tier."
		if e.retryAfter > 0 {
			msg += " Please retry after " + strconv.FormatInt(int64(math.Ceil(e.retryAfter.Seconds())), 10) + " seconds."
		}
		b = appendString(b, msg)
		return append(b, "}}"...)
	case e.status == 401:
		return []byte(`{"error":{"code":"401","message":"` + azureNoKey + `"}}`)
	}
	return a.openAI.errorBody(e, reqID)
}

func (a azure) plainBody(c *completion) []byte {
	b := a.openAI.plainBody(c)
	// {"id":…,"choices":[{…,"finish_reason":"stop"}],…}: add the filter
	// results where Azure puts them.
	i := strings.Index(string(b), `,"choices":[`)
	j := strings.Index(string(b), `}],"usage":`)
	if i < 0 || j < i {
		return b
	}
	out := make([]byte, 0, len(b)+2*len(azureSafe)+64)
	out = append(out, b[:i]...)
	out = append(out, `,"prompt_filter_results":`+azurePrompt...)
	out = append(out, b[i:j]...)
	out = append(out, `,"content_filter_results":`+azureSafe...)
	return append(out, b[j:]...)
}

// streamStart opens with the chunk Azure sends first: no choices, the
// prompt's filter results, and empty id, model and object.
func (a azure) streamStart(b []byte, c *completion) []byte {
	b = append(b, `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":`+azurePrompt+"}\n\n"...)
	return a.openAI.streamStart(b, c)
}

func (a azure) streamDelta(b []byte, c *completion, text string) []byte {
	choice := appendString([]byte(`{"index":0,"delta":{"content":`), text)
	choice = append(choice, `},"logprobs":null,"finish_reason":null,"content_filter_results":`+azureSafe+`}`...)
	return a.chunk(b, c, string(choice), nil)
}

// azureGate applies what Azure checks before anything else: on classic
// routes an api-version and the api-key header; on v1 routes api-key or a
// Bearer token. It writes the failure and reports false when one fails.
func (s *Server) azureGate(w http.ResponseWriter, r *http.Request, classic bool) bool {
	d := azure{}
	if classic && r.URL.Query().Get("api-version") == "" {
		s.bump(&s.stats.NotFound)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"code":"404","message":"Resource not found"}}`))
		return false
	}
	key := r.Header.Get("api-key")
	if key == "" && !classic {
		key = sentKey(r)
	}
	if key == "" {
		s.bump(&s.stats.Unauthorized)
		s.fail(w, d, "", errAuth(""))
		return false
	}
	return true
}

// registerAzureRoutes adds the Azure routes to the mux.
func (s *Server) registerAzureRoutes() {
	api := func(classic bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if s.azureGate(w, r, classic) {
				s.handleAPI(azure{deployment: r.PathValue("dep")})(w, r)
			}
		}
	}
	s.mux.HandleFunc("POST /openai/deployments/{dep}/chat/completions", api(true))
	s.mux.HandleFunc("POST /openai/deployments/{dep}/embeddings", func(w http.ResponseWriter, r *http.Request) {
		if s.azureGate(w, r, true) {
			s.handleAPI(embeddings{deployment: r.PathValue("dep")})(w, r)
		}
	})
	s.mux.HandleFunc("POST /openai/v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		if s.azureGate(w, r, false) {
			s.handleAPI(embeddings{})(w, r)
		}
	})
	s.mux.HandleFunc("POST /openai/v1/chat/completions", api(false))
	for _, classic := range []bool{true, false} {
		path := map[bool]string{true: "POST /openai/responses", false: "POST /openai/v1/responses"}[classic]
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if s.azureGate(w, r, classic) {
				s.handleAPI(responses{})(w, r)
			}
		})
	}
	for pattern, h := range map[string]http.HandlerFunc{
		"POST /files":               s.handleFileUpload,
		"GET /files":                s.handleFileList,
		"GET /files/{id}":           s.handleFileGet,
		"GET /files/{id}/content":   s.handleFileContent,
		"POST /batches":             s.handleOABatchCreate,
		"GET /batches":              s.handleOABatchList,
		"GET /batches/{id}":         s.handleOABatchGet,
		"POST /batches/{id}/cancel": s.handleOABatchCancel,
	} {
		method, path, _ := strings.Cut(pattern, " ")
		for _, root := range []string{"/openai", "/openai/v1"} {
			classic := root == "/openai"
			s.mux.HandleFunc(method+" "+root+path, func(w http.ResponseWriter, r *http.Request) {
				s.batches.inFlight.Add(1)
				defer s.batches.inFlight.Add(-1)
				if s.azureGate(w, r, classic) {
					h(w, r)
				}
			})
		}
	}
}

// batchEndpoints are the endpoints the mock's OpenAI batches take.
const batchEndpoints = "/v1/chat/completions, /v1/responses and /v1/embeddings"

// itemDialect is the dialect the items of a batch created at path for
// endpoint are answered in (Azure's under /openai/), or nil for an
// endpoint the mock does not batch.
func itemDialect(path, endpoint string) dialect {
	azureAPI := strings.HasPrefix(path, "/openai/")
	switch endpoint {
	case "/v1/chat/completions", "/chat/completions":
		if azureAPI {
			return azure{}
		}
		return openAI{}
	case "/v1/responses", "/responses":
		return responses{}
	case "/v1/embeddings", "/embeddings":
		return embeddings{}
	}
	return nil
}
