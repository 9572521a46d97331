// Command sdkbench sends N chat completions through the official openai-go
// SDK, errgroup-bounded at a concurrency, and writes each answer's JSON to
// an output file: the baseline llmrun's client CPU per token is compared
// against (scripts/sdkbench.sh runs both against one llmrun mock). Its own
// module, so llmrun's module gains no dependency.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"golang.org/x/sync/errgroup"
)

func main() {
	base := flag.String("base-url", "http://127.0.0.1:8080/v1", "the server's OpenAI base URL")
	n := flag.Int("n", 2000, "requests to send")
	conc := flag.Int("concurrency", 64, "requests in flight")
	stream := flag.Bool("stream", false, "stream the answers (accumulated into a completion, usage included)")
	model := flag.String("model", "gpt-4o-mini", "model to ask")
	out := flag.String("o", os.DevNull, "write each answer's JSON here, a line each")
	pool := flag.Bool("pool", true, "keep a connection per request in flight (false: the SDK's default client, which keeps 2 idle per host)")
	flag.Parse()
	opts := []option.RequestOption{option.WithBaseURL(*base), option.WithAPIKey("sk-bench"), option.WithMaxRetries(2)}
	if *pool {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = *conc
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: tr}))
	}
	client := openai.NewClient(opts...)
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := bufio.NewWriter(f)
	var mu sync.Mutex
	var tokens atomic.Int64
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(*conc)
	for i := range *n {
		g.Go(func() error {
			params := openai.ChatCompletionNewParams{
				Model:    *model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Tell me one fact about the number %d.", i))},
			}
			c, err := complete(ctx, &client, params, *stream)
			if err != nil {
				return fmt.Errorf("request %d: %w", i, err)
			}
			tokens.Add(c.Usage.CompletionTokens)
			line := []byte(c.RawJSON())
			if len(line) == 0 { // accumulated from a stream: no raw JSON
				if line, err = json.Marshal(c); err != nil {
					return err
				}
			}
			mu.Lock()
			defer mu.Unlock()
			w.Write(line)
			return w.WriteByte('\n')
		})
	}
	if err := g.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("requests %d output_tokens %d\n", *n, tokens.Load())
}

// complete sends one request, plain or streamed; a stream is accumulated
// into a whole completion, as a caller that keeps the answer does.
func complete(ctx context.Context, client *openai.Client, params openai.ChatCompletionNewParams, stream bool) (*openai.ChatCompletion, error) {
	if !stream {
		return client.Chat.Completions.New(ctx, params)
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return &acc.ChatCompletion, nil
}
