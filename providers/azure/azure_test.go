package azure

import (
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
)

// TestURLs: every base URL form sends each endpoint where Azure serves
// it, with the api-version in the query (not mangled into the path, issue
// 14), and records a canonical base URL that parses back to the same place.
func TestURLs(t *testing.T) {
	const res = "https://x.openai.azure.com"
	tests := map[string]struct {
		base, version                    string
		chat, responses, embeddings, api string // api: the batch API's files URL
		canonical, deployment            string
	}{
		"classic deployment URL, version in the query (the issue's URL)": {
			base:      res + "/openai/deployments/dep1?api-version=2024-10-21",
			chat:      res + "/openai/deployments/dep1/chat/completions?api-version=2024-10-21",
			responses: res + "/openai/responses?api-version=2024-10-21", embeddings: res + "/openai/deployments/dep1/embeddings?api-version=2024-10-21",
			api:       res + "/openai/files?purpose=batch&api-version=2024-10-21",
			canonical: res + "/openai/deployments/dep1?api-version=2024-10-21", deployment: "dep1",
		},
		"classic deployment URL, version configured, trailing path": {
			base: res + "/openai/deployments/dep%201/chat/completions/", version: "2024-10-21",
			chat:      res + "/openai/deployments/dep%201/chat/completions?api-version=2024-10-21",
			responses: res + "/openai/responses?api-version=2024-10-21", embeddings: res + "/openai/deployments/dep%201/embeddings?api-version=2024-10-21",
			api:       res + "/openai/files?purpose=batch&api-version=2024-10-21",
			canonical: res + "/openai/deployments/dep%201?api-version=2024-10-21", deployment: "dep 1",
		},
		"the URL's version beats the configured one": {
			base: res + "/openai/deployments/d?api-version=2025-01-01", version: "2024-10-21",
			chat:      res + "/openai/deployments/d/chat/completions?api-version=2025-01-01",
			responses: res + "/openai/responses?api-version=2025-01-01", embeddings: res + "/openai/deployments/d/embeddings?api-version=2025-01-01",
			api:       res + "/openai/files?purpose=batch&api-version=2025-01-01",
			canonical: res + "/openai/deployments/d?api-version=2025-01-01", deployment: "d",
		},
		"bare endpoint with a version: the model names the deployment": {
			base: res + "/", version: "2024-10-21",
			chat:      res + "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
			responses: res + "/openai/responses?api-version=2024-10-21", embeddings: res + "/openai/deployments/gpt-4o/embeddings?api-version=2024-10-21",
			api:       res + "/openai/files?purpose=batch&api-version=2024-10-21",
			canonical: res + "/openai?api-version=2024-10-21",
		},
		"bare endpoint without a version: v1": {
			base: res,
			chat: res + "/openai/v1/chat/completions", responses: res + "/openai/v1/responses", embeddings: res + "/openai/v1/embeddings",
			api: res + "/openai/v1/files?purpose=batch", canonical: res + "/openai/v1",
		},
		"v1 path drops a dated version, keeps preview and other parameters": {
			base: res + "/openai/v1?api-version=preview&x=1", version: "2024-10-21",
			chat:      res + "/openai/v1/chat/completions?x=1&api-version=preview",
			responses: res + "/openai/v1/responses?x=1&api-version=preview", embeddings: res + "/openai/v1/embeddings?x=1&api-version=preview",
			api:       res + "/openai/v1/files?purpose=batch&x=1&api-version=preview",
			canonical: res + "/openai/v1?x=1&api-version=preview",
		},
		"a gateway prefix is kept": {
			base: "https://apim.example.com/team-a/openai/v1",
			chat: "https://apim.example.com/team-a/openai/v1/chat/completions", responses: "https://apim.example.com/team-a/openai/v1/responses",
			embeddings: "https://apim.example.com/team-a/openai/v1/embeddings", api: "https://apim.example.com/team-a/openai/v1/files?purpose=batch",
			canonical: "https://apim.example.com/team-a/openai/v1",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			tg, err := Parse(tt.base, tt.version)
			if err != nil {
				t.Fatal(err)
			}
			for ep, want := range map[providers.Endpoint]string{providers.EndpointChat: tt.chat, providers.EndpointResponses: tt.responses, providers.EndpointEmbeddings: tt.embeddings} {
				if got := tg.URL(ep, "gpt-4o"); got != want {
					t.Errorf("%v: %s, want %s", ep, got, want)
				}
			}
			if got := tg.with("/files?purpose=batch"); got != tt.api {
				t.Errorf("batch API: %s, want %s", got, tt.api)
			}
			if tg.BaseURL() != tt.canonical || tg.Deployment != tt.deployment || Deployment(tt.base) != tt.deployment {
				t.Errorf("canonical %s deployment %q; want %s %q", tg.BaseURL(), tg.Deployment, tt.canonical, tt.deployment)
			}
			again, err := Parse(tg.BaseURL(), "")
			if err != nil || again.URL(providers.EndpointChat, "gpt-4o") != tt.chat {
				t.Errorf("the canonical URL does not parse back: %v %+v", err, again)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for base, want := range map[string]string{
		"https://x.openai.azure.com/openai/deployments/dep1": "need an api-version",
		"x.openai.azure.com":                             "not a URL",
		"https://x.openai.azure.com/openai/models":       "not an Azure OpenAI path",
		"https://x.openai.azure.com/openai/deployments/": "no deployment",
		"ftp://x.openai.azure.com":                       "not a URL",
	} {
		if _, err := Parse(base, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", base, err, want)
		}
	}
	if err := Check(providers.Config{BaseURL: "https://user:secret@x.openai.azure.com/openai/deployments/d"}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Check: %v", err)
	}
	p := New(providers.Config{BaseURL: "https://x.openai.azure.com/openai/deployments/d"})
	_, err := p.Send(t.Context(), &providers.Request{Body: []byte(`{}`)})
	if providers.ClassOf(err) != providers.ClassInvalid || !strings.Contains(err.Error(), "api-version") {
		t.Errorf("a client of a bad base URL: %v", err)
	}
}

// TestRefine: the content filter's 400 is a clear, non-retryable error
// naming what tripped; a 429 without retry-after takes the message's hint.
func TestRefine(t *testing.T) {
	filtered := &providers.Error{Class: providers.ClassInvalid, Status: 400, Code: "content_filter", Message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
		Body: []byte(`{"error":{"message":"The response was filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"sexual":{"filtered":true,"severity":"high"},"jailbreak":{"filtered":true,"detected":true}}}}}`)}
	refine(filtered)
	if filtered.Class.Retryable() || filtered.Code != "content_filter" ||
		!strings.Contains(filtered.Message, "content filter refused the prompt (jailbreak: detected, sexual: high)") || !strings.Contains(filtered.Message, "management policy") {
		t.Errorf("content filter: %+v", filtered)
	}
	limited := &providers.Error{Class: providers.ClassRateLimited, Status: 429, Code: "429", Message: "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}
	refine(limited)
	if !limited.HasRetryAfter || limited.RetryAfter != 6*time.Second || limited.Class != providers.ClassRateLimited {
		t.Errorf("429 hint: %+v", limited)
	}
	hinted := &providers.Error{Class: providers.ClassRateLimited, HasRetryAfter: true, RetryAfter: time.Second, Message: "Please retry after 6 seconds."}
	refine(hinted)
	if hinted.RetryAfter != time.Second {
		t.Errorf("the header's hint wins: %v", hinted.RetryAfter)
	}
}
