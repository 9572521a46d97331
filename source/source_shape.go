package source

import (
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
)

// Shape is the wire format of the input's first line (registry.ShapeOf),
// which picks the provider of a run that names none. A first line in two
// shapes is an input error naming it: guessing a provider from either of
// its members would decide a run the check then refuses, and a missing
// key for the provider guessed would hide why. A line that cannot be
// read is OpenAI's, the shape every provider takes: the check reports it.
func (s *Source) Shape() (providers.Format, error) {
	line, n, err := s.firstLine()
	if err != nil {
		return providers.FormatOpenAI, nil
	}
	f, err := registry.ShapeOf(line)
	if err != nil {
		return f, s.inputErr(n, err.Error())
	}
	return f, nil
}
