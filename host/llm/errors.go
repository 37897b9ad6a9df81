package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/openai/openai-go/v3"
)

// Sentinels of a failed chat completion; every error from Client.Chat wraps
// one of them (or context.Canceled when the caller cancelled). Check with
// errors.Is.
var (
	// ErrUnavailable: the endpoint could not be reached (connection
	// refused, reset, DNS) or kept answering HTTP 5xx, 429, 408 or 409
	// after the configured retries.
	ErrUnavailable = errors.New("llm endpoint unavailable")
	// ErrTimeout: no complete answer within the timeout of the [llm.NAME]
	// entry, or before the caller's deadline.
	ErrTimeout = errors.New("llm request timed out")
	// ErrBadResponse: the endpoint answered, but not with an OpenAI chat
	// completion (malformed JSON, not JSON, no choices).
	ErrBadResponse = errors.New("llm bad response")
	// ErrRejected: the endpoint refused the request with an HTTP 4xx that
	// retrying will not fix (bad key, unknown model, bad request).
	ErrRejected = errors.New("llm request rejected")
	// ErrInvalidRequest: the ChatRequest is unusable (unknown role, tool
	// schema that is not a JSON object); nothing was sent.
	ErrInvalidRequest = errors.New("invalid llm request")
	// ErrNotConfigured: the LLM name is not in the host config, or its API
	// key variable is unset.
	ErrNotConfigured = errors.New("llm not configured")
)

// Error is a failed chat completion: which LLM, where, what happened.
type Error struct {
	// LLM is the config name, the NAME of [llm.NAME].
	LLM string
	// BaseURL is the endpoint, with secrets masked.
	BaseURL string
	// Kind is the sentinel: ErrUnavailable, ErrTimeout, ErrBadResponse,
	// ErrRejected, or context.Canceled.
	Kind error
	// StatusCode is the HTTP status of the last attempt; 0 without one.
	StatusCode int
	// Attempts is how many HTTP requests were made (1 + retries done).
	Attempts int
	// Detail says what happened and what to do; it never holds the key.
	Detail string
	// Err is the underlying error from the HTTP client or the library.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("llm %q at %s: %s", e.LLM, e.BaseURL, e.Detail)
}

// Unwrap exposes both the sentinel and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// maxServerMessage bounds how much of a server's error message is quoted.
const maxServerMessage = 300

// classify turns what the library returned into an *Error. ctx is the
// caller's context, to tell its deadline or cancellation from ours.
func (c *client) classify(ctx context.Context, err error, status int, contentType string, attempts int) *Error {
	e := &Error{LLM: c.name, BaseURL: c.baseURL, StatusCode: status, Attempts: attempts, Err: err}
	tries := fmt.Sprintf("after %d attempt%s", attempts, plural(attempts))
	var apiErr *openai.Error
	var netErr net.Error
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled):
		e.Kind = context.Canceled
		e.Detail = "request cancelled by the caller"
	case ctx.Err() != nil:
		e.Kind = ErrTimeout
		e.Detail = "timed out: the caller's deadline passed before the endpoint answered"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		e.Kind = ErrTimeout
		e.Detail = fmt.Sprintf("timed out: no answer within timeout %s: raise timeout in [llm.%s] or check the server's load",
			c.entry.Timeout, c.name)
	case errors.As(err, &apiErr):
		e.StatusCode = apiErr.StatusCode
		msg := fmt.Sprintf("HTTP %d %s", apiErr.StatusCode, statusText(apiErr.StatusCode))
		if m := c.serverMessage(apiErr.Message); m != "" {
			msg += fmt.Sprintf(" (%q)", m)
		}
		switch code := apiErr.StatusCode; {
		case code >= 500 || code == 429 || code == 408 || code == 409:
			e.Kind = ErrUnavailable
			e.Detail = fmt.Sprintf("endpoint unavailable: %s %s: try again later, or raise max_retries in [llm.%s]", msg, tries, c.name)
		case code == 401 || code == 403:
			e.Kind = ErrRejected
			e.Detail = fmt.Sprintf("request rejected: %s: %s", msg, c.keyHint())
		case code == 404:
			e.Kind = ErrRejected
			e.Detail = fmt.Sprintf("request rejected: %s: check that base_url ends where the API starts (often /v1) and that model %q exists there",
				msg, c.entry.Model)
		default:
			e.Kind = ErrRejected
			e.Detail = fmt.Sprintf("request rejected: %s", msg)
		}
	case status >= 200 && status < 300 || isDecodeError(err):
		e.Kind = ErrBadResponse
		what := "malformed JSON"
		if contentType != "" && !strings.Contains(contentType, "json") {
			what = fmt.Sprintf("content-type %q, not JSON", contentType)
		}
		e.Detail = fmt.Sprintf("bad response: %s: %s: check that base_url points at an OpenAI-compatible chat-completions API",
			what, c.scrub(err.Error()))
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Kind = ErrUnavailable
		e.Detail = fmt.Sprintf("endpoint unavailable: connection refused %s: check that the server is running and base_url is right", tries)
	default:
		e.Kind = ErrUnavailable
		e.Detail = fmt.Sprintf("endpoint unavailable: %s %s: check that the server is running and base_url is right",
			c.scrub(causeText(err)), tries)
	}
	return e
}

func isDecodeError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "error parsing response json") || strings.Contains(s, "expected destination type")
}

// causeText is the innermost useful text of a transport error: url.Error
// repeats the method and URL, which the message already names.
func causeText(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return "the server closed the connection without answering"
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Op + ": " + op.Err.Error()
	}
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

func (c *client) keyHint() string {
	if c.entry.APIKeyEnv == "" {
		return fmt.Sprintf("the endpoint wants an API key: set api_key_env in [llm.%s] to the variable that holds it", c.name)
	}
	return fmt.Sprintf("check the API key in $%s", c.entry.APIKeyEnv)
}

// serverMessage quotes at most maxServerMessage bytes of what the server
// said, with the key masked (servers like to echo a wrong key).
func (c *client) serverMessage(m string) string {
	m = strings.TrimSpace(c.scrub(m))
	if len(m) > maxServerMessage {
		m = m[:maxServerMessage] + "…"
	}
	return m
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "error"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// invalid reports a ChatRequest the client refuses to send.
func (c *client) invalid(format string, args ...any) error {
	return fmt.Errorf("llm %q: %w: %s", c.name, ErrInvalidRequest, fmt.Sprintf(format, args...))
}
