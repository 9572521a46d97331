// Command gen refreshes pricing/snapshot.json: it reads a price list in
// LiteLLM's model_prices_and_context_window.json shape (by default LiteLLM's
// own file, which is MIT-licensed), keeps the chat and embedding models of the
// providers llmrun speaks and only their price fields, and writes it sorted
// with a dated "_snapshot" header. Run it through `go generate ./pricing`
// where the network allows, or with -in on a file got another way.
//
// The model-family rules (modelrules/rules.json) are refreshed from the
// same list: after a refresh, `go test ./modelrules` checks that every
// model the new snapshot names falls in a family of its own provider, and
// the list's supports_reasoning flags name the models the reasoning
// families must match.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"time"
)

// LiteLLMURL is where LiteLLM publishes its price list.
const LiteLLMURL = "https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json"

var (
	// providers are the LiteLLM provider names llmrun speaks or will speak.
	providers = map[string]bool{"openai": true, "anthropic": true, "azure": true, "gemini": true}
	modes     = map[string]bool{"chat": true, "embedding": true, "responses": true}
	// priceField matches the per-token rates pricing reads: plain, batch and
	// long-context tiers (flex/priority tiers are not routes llmrun uses).
	priceField = regexp.MustCompile(`^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost)(_batches|_above_\d+k_tokens)?$`)
	keepField  = map[string]bool{"litellm_provider": true, "mode": true, "source": true}
)

func main() {
	url := flag.String("url", LiteLLMURL, "price list to fetch")
	in := flag.String("in", "", "read the price list from this file instead of -url")
	out := flag.String("o", "snapshot.json", "output file")
	date := flag.String("date", time.Now().UTC().Format(time.DateOnly), "snapshot date (YYYY-MM-DD)")
	source := flag.String("source", "", "where the list came from (default: -url or -in)")
	flag.Parse()
	if err := run(*url, *in, *out, *date, *source); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(url, in, out, date, source string) error {
	if _, err := time.Parse(time.DateOnly, date); err != nil {
		return fmt.Errorf("-date: %w", err)
	}
	var raw []byte
	var err error
	if in != "" {
		raw, err = os.ReadFile(in)
		if source == "" {
			source = in
		}
	} else {
		raw, err = fetch(url)
		if source == "" {
			source = "LiteLLM model_prices_and_context_window.json (MIT), " + url
		}
	}
	if err != nil {
		return err
	}
	kept, err := filter(raw)
	if err != nil {
		return err
	}
	if len(kept) < 20 {
		return fmt.Errorf("only %d models kept: the list looks broken, keeping the old snapshot", len(kept))
	}
	kept["_snapshot"] = map[string]any{
		"date":   date,
		"source": source,
		"kept":   "chat and embedding models of openai, anthropic, azure, gemini; price fields only (pricing/gen)",
	}
	b, err := json.MarshalIndent(kept, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

func fetch(url string) ([]byte, error) {
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// filter keeps the models and fields pricing reads.
func filter(raw []byte) (map[string]any, error) {
	var all map[string]map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, fmt.Errorf("price list: %w", err)
	}
	kept := make(map[string]any)
	for name, m := range all {
		p, _ := m["litellm_provider"].(string)
		mode, _ := m["mode"].(string)
		if !providers[p] || !modes[mode] {
			continue
		}
		if _, ok := m["input_cost_per_token"].(float64); !ok {
			continue
		}
		e := make(map[string]any)
		for k, v := range m {
			if keepField[k] || priceField.MatchString(k) {
				e[k] = v
			}
		}
		kept[name] = e
	}
	return kept, nil
}
