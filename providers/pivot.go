package providers

import "errors"

// The pivot is the one form every translation between wire formats goes
// through: each format converts its own bodies to it and from it, so a
// new format writes two conversions, not one per other format, and no
// code switches on a pair of formats.
//
// The pivot is a Chat Completions request body (JSON) that carries: model;
// messages with roles system, developer, user and assistant, each content
// a string or text and image_url parts (an image by URL or as a data:
// URL); the output cap (max_completion_tokens, or max_tokens);
// temperature, top_p, n, seed, presence_penalty, frequency_penalty; stop
// (a string or up to 4); user; response_format (text, json_object or
// json_schema). Tools, tool calls and anything else it does not name are
// not carried: a toPivot refuses them, and a fromPivot refuses what of the
// pivot its format has no place for (seed toward Anthropic), with the
// reason, as a *TranslateError. Strings stay raw JSON throughout, so no
// text is re-escaped.
//
// OpenAI's own conversions are the identity: its bodies reach an
// OpenAI-format provider untouched, and a field the pivot does not carry
// is refused by the target's fromPivot (its field rules name it as the
// user wrote it). The pivot of an embeddings request is likewise OpenAI's
// embeddings body ({model, input, dimensions}); a format without
// embeddings has no conversions for them.

// pivotConv is one format's conversions to and from the pivot, for chat
// requests or for embeddings requests.
type pivotConv struct {
	// toPivot converts a body of the format to the pivot.
	toPivot func(body []byte) ([]byte, error)
	// fromPivot converts a pivot body to the format; defaultMaxTokens is
	// the cap of a format that requires one when the pivot sets none.
	fromPivot func(pivot []byte, defaultMaxTokens int) ([]byte, error)
}

// identity is the conversion of OpenAI's format, which is the pivot's.
var identity = pivotConv{
	toPivot:   func(body []byte) ([]byte, error) { return body, nil },
	fromPivot: func(pivot []byte, _ int) ([]byte, error) { return pivot, nil },
}

// pivotPair is the conversions of formats from and to for endpoint ep
// (chat or embeddings); a format without them fails with a
// *TranslateError.
func pivotPair(from, to Format, ep Endpoint) (src, dst pivotConv, err error) {
	conv := func(f Format) pivotConv {
		r, ok := formatOf(f)
		switch {
		case !ok:
			return pivotConv{}
		case ep == EndpointEmbeddings:
			return r.embeddings
		}
		return r.chat
	}
	src, dst = conv(from), conv(to)
	switch {
	case ep == EndpointEmbeddings && (src.toPivot == nil || dst.fromPivot == nil):
		lacking := to
		if dst.fromPivot != nil {
			lacking = from
		}
		err = &TranslateError{From: from, To: to, Reason: "an embeddings request cannot fall back to a chat API (the " + lacking.String() + " format has no embeddings)"}
	case src.toPivot == nil || dst.fromPivot == nil:
		err = &TranslateError{From: from, To: to, Reason: "unsupported pair of formats"}
	}
	return src, dst, err
}

// viaPivot translates body of endpoint ep (chat or embeddings) from
// format from to format to: from's toPivot, then to's fromPivot.
func viaPivot(body []byte, from, to Format, ep Endpoint, defaultMaxTokens int) ([]byte, error) {
	src, dst, err := pivotPair(from, to, ep)
	if err != nil {
		return nil, err
	}
	pivot, err := src.toPivot(body)
	if err == nil {
		body, err = dst.fromPivot(pivot, defaultMaxTokens)
	}
	if err != nil {
		return nil, renamed(err, from, to)
	}
	return body, nil
}

// renamed makes a *TranslateError of one half of a translation name the
// pair the caller asked for.
func renamed(err error, from, to Format) error {
	var te *TranslateError
	if errors.As(err, &te) && (te.From != from || te.To != to) {
		return &TranslateError{From: from, To: to, Reason: te.Reason}
	}
	return err
}
