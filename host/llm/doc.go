// Package llm owns the host's LLM clients: the [llm.NAME] tables of the host
// config file (LoadConfig, DefaultConfigPath), OpenAI-compatible chat
// completions through github.com/openai/openai-go/v3 (New, Clients), the
// JSON-friendly request and response types that cross the plugin boundary
// (ChatRequest, ChatResponse, Message, ToolDef, ToolCall, Usage), and the
// typed errors of a failed completion (ErrUnavailable, ErrTimeout,
// ErrBadResponse, ErrRejected, ErrInvalidRequest, ErrNotConfigured).
//
// API keys never live in the config file: an entry names the environment
// variable that holds its key (api_key_env), the key is read when the client
// is created, and it is kept out of the config, Public, errors and logs.
package llm
