package cmd

import "github.com/spf13/pflag"

// addProviderFlags adds the flags that say how to reach the provider
// beyond its name and base URL.
func addProviderFlags(f *pflag.FlagSet, o *BatchOptions) {
	f.StringVar(&o.APIVersion, "api-version", "", "Azure OpenAI api-version for deployment URLs, such as 2024-10-21 (default: OPENAI_API_VERSION; none: the v1 API)")
	f.BoolVar(&o.NoAuth, "no-auth", false, "send no API key, even when one is set (a server without auth, or one --header authenticates to); loopback and private base URLs need none anyway")
}
