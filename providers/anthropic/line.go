package anthropic

import "github.com/llmrun/llmrun/providers"

// Line is the shape of a line of Anthropic's Message Batches:
// {custom_id, params}. Its request is always a Messages (chat) request.
var Line = providers.LineShape{Format: providers.FormatAnthropic, Key: "params"}
