package llm

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/nexus-eval/nexus/manifest"
)

// Defaults for the optional keys of an [llm.NAME] table.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 2
	// MaxRetriesLimit bounds max_retries: retries exist for blips, not for
	// waiting out an outage, which would stall a whole run.
	MaxRetriesLimit = 10
	// MaxConfigSize is the largest config file accepted.
	MaxConfigSize = 1 << 20
)

// ConfigEnv names the environment variable that points at the host config
// file, overriding the default locations.
const ConfigEnv = "NEXUS_CONFIG"

// Config is the LLM part of the host config file.
type Config struct {
	// LLM holds the entries by name, the NAME of [llm.NAME].
	LLM map[string]Entry
	// Path is the file the config was read from, or the default path that
	// was looked at and did not exist; "" for a config built in memory.
	Path string
	// Found reports whether Path existed and was read.
	Found bool
}

// Entry is one [llm.NAME] table with its defaults applied. It holds the name
// of the environment variable with the API key, never the key.
type Entry struct {
	BaseURL string
	Model   string
	// APIKeyEnv names the environment variable holding the API key; empty
	// for endpoints that need no key (a local server).
	APIKeyEnv string
	// Timeout bounds each attempt of a request (not the retries together).
	Timeout time.Duration
	// MaxRetries is how many times a failed request is retried (connection
	// errors, HTTP 408, 409, 429 and 5xx), with the library's backoff.
	MaxRetries int
	// Temperature is the default sampling temperature; nil leaves it to the
	// server. A ChatRequest's own temperature wins.
	Temperature *float64
	// MaxTokens is the default completion limit; 0 leaves it to the
	// server. A ChatRequest's own limit wins.
	MaxTokens int
}

// PublicEntry is an Entry as written to run records: everything needed to
// know which endpoint and model answered, nothing secret. The base URL has
// any password and query values masked.
type PublicEntry struct {
	BaseURL     string   `json:"base_url"`
	Model       string   `json:"model"`
	APIKeyEnv   string   `json:"api_key_env,omitempty"`
	Timeout     string   `json:"timeout"`
	MaxRetries  int      `json:"max_retries"`
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
}

// Public returns the config without secrets, by LLM name, for run records.
// A nil config gives an empty map.
func (c *Config) Public() map[string]PublicEntry {
	out := map[string]PublicEntry{}
	if c == nil {
		return out
	}
	for name, e := range c.LLM {
		out[name] = e.Public()
	}
	return out
}

// Public returns the entry without secrets.
func (e Entry) Public() PublicEntry {
	var temp *float64
	if e.Temperature != nil {
		t := *e.Temperature
		temp = &t
	}
	return PublicEntry{
		BaseURL:     redactURL(e.BaseURL),
		Model:       e.Model,
		APIKeyEnv:   e.APIKeyEnv,
		Timeout:     e.Timeout.String(),
		MaxRetries:  e.MaxRetries,
		Temperature: temp,
		MaxTokens:   e.MaxTokens,
	}
}

// Names returns the configured LLM names, sorted.
func (c *Config) Names() []string {
	if c == nil {
		return nil
	}
	names := make([]string, 0, len(c.LLM))
	for name := range c.LLM {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// DefaultConfigPath returns the host config file used when none is given:
// $NEXUS_CONFIG when set; else .nexus/config.toml in the working directory
// when it exists; else $XDG_CONFIG_HOME/nexus/config.toml, or
// ~/.config/nexus/config.toml without XDG_CONFIG_HOME.
func DefaultConfigPath() string {
	home, _ := os.UserHomeDir()
	return defaultConfigPath(os.Getenv, home, func(p string) bool {
		_, err := os.Stat(p)
		return err == nil
	})
}

func defaultConfigPath(getenv func(string) string, home string, exists func(string) bool) string {
	if p := getenv(ConfigEnv); p != "" {
		return p
	}
	local := filepath.Join(".nexus", "config.toml")
	if exists(local) {
		return local
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "nexus", "config.toml")
	}
	if home == "" {
		// Nowhere sensible to look: fall back to the local path, which is
		// known not to exist, so the config is simply empty.
		return local
	}
	return filepath.Join(home, ".config", "nexus", "config.toml")
}

// LoadConfig reads the host config file at path. With path "" it reads the
// default (see DefaultConfigPath): a default file that does not exist gives
// an empty config, because a host without LLMs is fine until something asks
// for one; a file named explicitly (path, or $NEXUS_CONFIG) must exist. Pass
// a --config flag's value as is, "" when the flag was not given.
//
// Problems in the file come back as manifest.Diagnostic values
// (path:line:col: message), joined; errors.As reaches each one.
func LoadConfig(path string) (*Config, error) {
	explicit := path != "" || os.Getenv(ConfigEnv) != ""
	if path == "" {
		path = DefaultConfigPath()
	}
	return loadConfig(path, explicit)
}

func loadConfig(path string, explicit bool) (*Config, error) {
	data, err := readLimited(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !explicit {
			return &Config{LLM: map[string]Entry{}, Path: path}, nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("host config %s: no such file: create it or drop --config / $%s", path, ConfigEnv)
		}
		return nil, fmt.Errorf("host config %s: %w", path, err)
	}
	return ParseConfig(path, data)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file: the config must be a file")
	}
	if st.Size() > MaxConfigSize {
		return nil, fmt.Errorf("file is %d bytes, over the 1 MiB limit", st.Size())
	}
	return os.ReadFile(path)
}

// ParseConfig decodes and validates a host config file; path is used in
// diagnostics and recorded as Config.Path. Parsing is strict: unknown keys
// and tables are errors, so a typo never silently drops a setting.
func ParseConfig(path string, data []byte) (*Config, error) {
	if len(data) > MaxConfigSize {
		return nil, manifest.Diagnostic{Path: path, Line: 1, Col: 1,
			Message: fmt.Sprintf("file is %d bytes, over the 1 MiB limit: keep the config small", len(data))}
	}
	var f configFile
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(&f)
	var strict *toml.StrictMissingError
	var decode *toml.DecodeError
	var ds manifest.Diagnostics
	switch {
	case err == nil:
	case errors.As(err, &strict):
		for i := range strict.Errors {
			ds = append(ds, unknownKey(path, &strict.Errors[i]))
		}
	case errors.As(err, &decode):
		return nil, decodeDiag(path, decode)
	default:
		return nil, manifest.Diagnostic{Path: path, Line: 1, Col: 1, Message: strings.TrimPrefix(err.Error(), "toml: ")}
	}

	cfg := &Config{LLM: make(map[string]Entry, len(f.LLM)), Path: path, Found: true}
	var probs []problem
	for _, name := range sortedKeys(f.LLM) {
		e, ps := f.LLM[name].resolve(name)
		probs = append(probs, ps...)
		cfg.LLM[name] = e
	}
	if len(probs) > 0 {
		ds = append(ds, locate(path, data, probs)...)
	}
	if len(ds) > 0 {
		ds.Sort()
		return nil, ds.Err()
	}
	return cfg, nil
}

// configFile is the file as written; pointers tell "absent" from zero.
type configFile struct {
	LLM map[string]fileEntry `toml:"llm"`
}

type fileEntry struct {
	BaseURL     *string  `toml:"base_url"`
	Model       *string  `toml:"model"`
	APIKeyEnv   *string  `toml:"api_key_env"`
	Timeout     *string  `toml:"timeout"`
	MaxRetries  *int     `toml:"max_retries"`
	Temperature *float64 `toml:"temperature"`
	MaxTokens   *int     `toml:"max_tokens"`
}

// problem is a validation failure at a key path ("llm.NAME.key"); when the
// key is absent, it is reported at the nearest table in the file.
type problem struct {
	key string
	msg string
}

var (
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	envRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (f fileEntry) resolve(name string) (Entry, []problem) {
	key := func(k string) string { return "llm." + name + "." + k }
	var probs []problem
	add := func(k, format string, args ...any) {
		probs = append(probs, problem{key: key(k), msg: fmt.Sprintf(format, args...)})
	}
	if !nameRE.MatchString(name) {
		probs = append(probs, problem{key: "llm." + name,
			msg: fmt.Sprintf("LLM name %q must be letters, digits, '-' and '_', starting with a letter or digit", name)})
	}
	e := Entry{Timeout: DefaultTimeout, MaxRetries: DefaultMaxRetries}
	switch {
	case f.BaseURL == nil:
		add("base_url", "[llm.%s] has no base_url: add one, e.g. base_url = \"http://localhost:8000/v1\"", name)
	default:
		e.BaseURL = *f.BaseURL
		if msg := checkBaseURL(e.BaseURL); msg != "" {
			add("base_url", "%s", msg)
		}
	}
	switch {
	case f.Model == nil || *f.Model == "":
		add("model", "[llm.%s] has no model: add one, e.g. model = \"gpt-4o-mini\"", name)
	default:
		e.Model = *f.Model
	}
	if f.APIKeyEnv != nil {
		e.APIKeyEnv = *f.APIKeyEnv
		// Never echo the value: someone may have pasted the key itself.
		if e.APIKeyEnv != "" && !envRE.MatchString(e.APIKeyEnv) {
			add("api_key_env", "api_key_env must name an environment variable (letters, digits and '_'), "+
				"e.g. api_key_env = \"OPENAI_API_KEY\"; the key itself belongs in that variable, never in the config")
		}
	}
	if f.Timeout != nil {
		d, err := time.ParseDuration(*f.Timeout)
		switch {
		case err != nil:
			add("timeout", "timeout %q is not a duration: write it like \"60s\" or \"1m30s\"", *f.Timeout)
		case d <= 0:
			add("timeout", "timeout %q must be positive", *f.Timeout)
		default:
			e.Timeout = d
		}
	}
	if f.MaxRetries != nil {
		if *f.MaxRetries < 0 || *f.MaxRetries > MaxRetriesLimit {
			add("max_retries", "max_retries = %d is out of range: use 0 to %d", *f.MaxRetries, MaxRetriesLimit)
		} else {
			e.MaxRetries = *f.MaxRetries
		}
	}
	if f.Temperature != nil {
		t := *f.Temperature
		if math.IsNaN(t) || t < 0 || t > 2 {
			add("temperature", "temperature = %v is out of range: use 0 to 2", t)
		} else {
			e.Temperature = &t
		}
	}
	if f.MaxTokens != nil {
		if *f.MaxTokens <= 0 {
			add("max_tokens", "max_tokens = %d must be positive: leave it out to let the server decide", *f.MaxTokens)
		} else {
			e.MaxTokens = *f.MaxTokens
		}
	}
	return e, probs
}

func checkBaseURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("base_url %q is not an http(s) URL: write it like \"https://api.openai.com/v1\"", redactURL(s))
	}
	return ""
}

// redactURL masks what a URL may carry as a secret: the password of its
// user info and the values of its query.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if i := strings.IndexAny(s, "@?"); i >= 0 {
			return s[:i] + "…"
		}
		return s
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"xxxxx"}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

var knownKeys = "base_url, model, api_key_env, timeout, max_retries, temperature, max_tokens"

func unknownKey(path string, e *toml.DecodeError) manifest.Diagnostic {
	line, col := e.Position()
	key := e.Key()
	msg := fmt.Sprintf("unknown key %q: remove it or check its spelling", strings.Join(key, "."))
	switch {
	case len(key) == 3 && strings.EqualFold(key[0], "llm"):
		msg += "; known keys of [llm." + key[1] + "]: " + knownKeys
	case len(key) == 1:
		msg += "; the host config holds [llm.NAME] tables"
	}
	return manifest.Diagnostic{Path: path, Line: line, Col: col, Message: msg}
}

var expectedTypes = map[string]string{
	"base_url":    "a string",
	"model":       "a string",
	"api_key_env": "a string naming an environment variable",
	"timeout":     "a duration string, e.g. timeout = \"60s\"",
	"max_retries": "an integer, e.g. max_retries = 2",
	"temperature": "a number, e.g. temperature = 0.2",
	"max_tokens":  "an integer, e.g. max_tokens = 1024",
}

func decodeDiag(path string, e *toml.DecodeError) manifest.Diagnostic {
	line, col := e.Position()
	msg := "invalid TOML: " + strings.TrimPrefix(e.Error(), "toml: ")
	if strings.HasPrefix(msg, "invalid TOML: cannot") {
		key := e.Key()
		switch {
		case len(key) == 3 && expectedTypes[strings.ToLower(key[2])] != "":
			msg = fmt.Sprintf("%s has the wrong type: it must be %s", strings.Join(key, "."), expectedTypes[strings.ToLower(key[2])])
		case len(key) == 2:
			msg = fmt.Sprintf("%s has the wrong type: it must be a table: [%s]", strings.Join(key, "."), strings.Join(key, "."))
		case len(key) == 1:
			msg = fmt.Sprintf("%s has the wrong type: it must hold tables: [%s.NAME]", key[0], key[0])
		}
	}
	return manifest.Diagnostic{Path: path, Line: line, Col: col, Message: msg}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
