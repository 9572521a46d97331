package registry

import "github.com/llmrun/llmrun/providers"

// PlainProviderAt builds e's live client at endpoint at, never streaming,
// whatever the Set's configuration: the probe that tells a server (or a
// gateway) that cannot stream from one that is down.
func (s *Set) PlainProviderAt(e Entry, at Endpoint) (providers.Provider, error) {
	cfg, err := s.config(e, at)
	if err != nil {
		return nil, err
	}
	cfg.Stream = false
	return e.New(cfg), nil
}
