// Command llmrun runs batches of LLM requests within provider limits,
// resumably. See README.md.
package main

import (
	"os"

	"github.com/llmrun/llmrun/cmd"
)

func main() { os.Exit(cmd.Main()) }
