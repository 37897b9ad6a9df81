package llm

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexus-eval/nexus/manifest"
)

func ptr[T any](v T) *T { return &v }

func TestParseConfigGood(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want map[string]Entry
	}{{
		name: "empty file",
		doc:  "",
		want: map[string]Entry{},
	}, {
		name: "defaults",
		doc:  "[llm.local]\nbase_url = \"http://localhost:8000/v1\"\nmodel = \"qwen\"\n",
		want: map[string]Entry{"local": {BaseURL: "http://localhost:8000/v1", Model: "qwen",
			Timeout: DefaultTimeout, MaxRetries: DefaultMaxRetries}},
	}, {
		name: "every key",
		doc: `# comment
[llm.gpt]
base_url = "https://api.openai.com/v1"
model = "gpt-4o-mini"
api_key_env = "OPENAI_API_KEY"
timeout = "1m30s"
max_retries = 0
temperature = 0.2
max_tokens = 512
`,
		want: map[string]Entry{"gpt": {BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini",
			APIKeyEnv: "OPENAI_API_KEY", Timeout: 90 * time.Second, MaxRetries: 0,
			Temperature: ptr(0.2), MaxTokens: 512}},
	}, {
		name: "several entries, inline and dotted forms, integer temperature",
		doc: `[llm]
a = { base_url = "http://a/v1", model = "m1", temperature = 1 }
b.base_url = "http://b/v1"
b.model = "m2"
b.timeout = "5s"
`,
		want: map[string]Entry{
			"a": {BaseURL: "http://a/v1", Model: "m1", Timeout: DefaultTimeout, MaxRetries: 2, Temperature: ptr(1.0)},
			"b": {BaseURL: "http://b/v1", Model: "m2", Timeout: 5 * time.Second, MaxRetries: 2},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ParseConfig("config.toml", []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			want := &Config{LLM: tt.want, Path: "config.toml", Found: true}
			if diff := cmp.Diff(want, cfg); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseConfigBad(t *testing.T) {
	t.Parallel()
	const head = "[llm.local]\nbase_url = \"http://localhost:8000/v1\"\nmodel = \"m\"\n"
	tests := []struct {
		name string
		doc  string
		want string // every diagnostic, one per line
	}{{
		name: "unknown key with position",
		doc:  head + "modle = \"m\"\n",
		want: `c.toml:4:1: unknown key "llm.local.modle": remove it or check its spelling; known keys of [llm.local]: ` + knownKeys,
	}, {
		name: "unknown top-level table",
		doc:  head + "[runtime]\nx = 1\n",
		want: `c.toml:4:2: unknown key "runtime": remove it or check its spelling; the host config holds [llm.NAME] tables`,
	}, {
		name: "bad duration at its value",
		doc:  head + "timeout = \"60 seconds\"\n",
		want: `c.toml:4:11: timeout "60 seconds" is not a duration: write it like "60s" or "1m30s"`,
	}, {
		name: "duration as a number",
		doc:  head + "timeout = 60\n",
		want: `c.toml:4:11: llm.local.timeout has the wrong type: it must be a duration string, e.g. timeout = "60s"`,
	}, {
		name: "negative duration",
		doc:  head + "timeout = \"-1s\"\n",
		want: `c.toml:4:11: timeout "-1s" must be positive`,
	}, {
		name: "missing base_url and model at the table header",
		doc:  "x = 1\n[llm.local]\ntimeout = \"1s\"\n",
		want: `c.toml:1:1: unknown key "x": remove it or check its spelling; the host config holds [llm.NAME] tables` + "\n" +
			`c.toml:2:1: [llm.local] has no base_url: add one, e.g. base_url = "http://localhost:8000/v1"` + "\n" +
			`c.toml:2:1: [llm.local] has no model: add one, e.g. model = "gpt-4o-mini"`,
	}, {
		name: "base_url not http",
		doc:  "[llm.local]\nbase_url = \"localhost:8000\"\nmodel = \"m\"\n",
		want: `c.toml:2:12: base_url "localhost:8000" is not an http(s) URL: write it like "https://api.openai.com/v1"`,
	}, {
		name: "key pasted into api_key_env is not echoed",
		doc:  head + "api_key_env = \"sk-proj-SECRET\"\n",
		want: `c.toml:4:15: api_key_env must name an environment variable (letters, digits and '_'), e.g. api_key_env = "OPENAI_API_KEY"; ` +
			`the key itself belongs in that variable, never in the config`,
	}, {
		name: "ranges",
		doc:  head + "max_retries = 11\ntemperature = 2.5\nmax_tokens = 0\n",
		want: `c.toml:4:15: max_retries = 11 is out of range: use 0 to 10` + "\n" +
			`c.toml:5:15: temperature = 2.5 is out of range: use 0 to 2` + "\n" +
			`c.toml:6:14: max_tokens = 0 must be positive: leave it out to let the server decide`,
	}, {
		name: "bad name",
		doc:  "[llm.\"my llm\"]\nbase_url = \"http://a/v1\"\nmodel = \"m\"\n",
		want: `c.toml:1:1: LLM name "my llm" must be letters, digits, '-' and '_', starting with a letter or digit`,
	}, {
		name: "llm not a table",
		doc:  "llm = 3\n",
		want: `c.toml:1:7: llm has the wrong type: it must hold tables: [llm.NAME]`,
	}, {
		name: "entry not a table",
		doc:  "[llm]\nlocal = 3\n",
		want: `c.toml:2:9: llm.local has the wrong type: it must be a table: [llm.local]`,
	}, {
		name: "duplicate key",
		doc:  head + "model = \"n\"\n",
		want: `c.toml:4:1: invalid TOML: key model is already defined`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ParseConfig("c.toml", []byte(tt.doc))
			if err == nil {
				t.Fatalf("ParseConfig = %+v, want an error", cfg)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			var d manifest.Diagnostic
			if !errors.As(err, &d) {
				t.Errorf("error %T is not a manifest.Diagnostic", err)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error leaks the value of api_key_env: %v", err)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(good, []byte("[llm.a]\nbase_url = \"http://a/v1\"\nmodel = \"m\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.toml")
	tests := []struct {
		name     string
		path     string
		explicit bool
		want     *Config
		wantErr  string
	}{
		{name: "explicit file", path: good, explicit: true,
			want: &Config{LLM: map[string]Entry{"a": {BaseURL: "http://a/v1", Model: "m", Timeout: DefaultTimeout, MaxRetries: 2}},
				Path: good, Found: true}},
		{name: "missing default file is an empty config", path: missing,
			want: &Config{LLM: map[string]Entry{}, Path: missing}},
		{name: "missing explicit file is an error", path: missing, explicit: true,
			wantErr: "host config " + missing + ": no such file: create it or drop --config / $NEXUS_CONFIG"},
		{name: "a directory is an error", path: dir, explicit: true,
			wantErr: "host config " + dir + ": not a regular file: the config must be a file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadConfig(tt.path, tt.explicit)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, cfg); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultConfigPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		env       map[string]string
		home      string
		localFile bool
		want      string
	}{
		{name: "NEXUS_CONFIG wins", env: map[string]string{"NEXUS_CONFIG": "/etc/n.toml", "XDG_CONFIG_HOME": "/x"},
			localFile: true, home: "/h", want: "/etc/n.toml"},
		{name: "local .nexus when it exists", env: map[string]string{"XDG_CONFIG_HOME": "/x"}, localFile: true,
			home: "/h", want: ".nexus/config.toml"},
		{name: "XDG_CONFIG_HOME", env: map[string]string{"XDG_CONFIG_HOME": "/x"}, home: "/h", want: "/x/nexus/config.toml"},
		{name: "relative XDG_CONFIG_HOME is ignored", env: map[string]string{"XDG_CONFIG_HOME": "x"}, home: "/h",
			want: "/h/.config/nexus/config.toml"},
		{name: "home", home: "/h", want: "/h/.config/nexus/config.toml"},
		{name: "no home", want: ".nexus/config.toml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := defaultConfigPath(func(k string) string { return tt.env[k] }, tt.home,
				func(p string) bool { return tt.localFile && p == filepath.Join(".nexus", "config.toml") })
			if got != tt.want {
				t.Errorf("defaultConfigPath = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPublic(t *testing.T) {
	t.Parallel()
	cfg := &Config{LLM: map[string]Entry{
		"a": {BaseURL: "https://user:hunter2@api.example.com/v1?api-key=hunter3", Model: "m",
			APIKeyEnv: "A_KEY", Timeout: 30 * time.Second, MaxRetries: 1, Temperature: ptr(0.5), MaxTokens: 100},
		"b": {BaseURL: "http://localhost:8000/v1", Model: "n", Timeout: time.Minute, MaxRetries: 2},
	}}
	got, err := json.Marshal(cfg.Public())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"base_url":"https://user:xxxxx@api.example.com/v1?api-key=xxxxx","model":"m","api_key_env":"A_KEY",` +
		`"timeout":"30s","max_retries":1,"temperature":0.5,"max_tokens":100},` +
		`"b":{"base_url":"http://localhost:8000/v1","model":"n","timeout":"1m0s","max_retries":2}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Public JSON (-want +got):\n%s", diff)
	}
	if got := (*Config)(nil).Public(); len(got) != 0 {
		t.Errorf("nil Config Public = %v, want empty", got)
	}
}

// TestLoadConfigEnv reads $NEXUS_CONFIG, so it cannot run in parallel (nor
// can any test that changes the environment).
func TestLoadConfigEnv(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(good, []byte("[llm.a]\nbase_url = \"http://a/v1\"\nmodel = \"m\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.toml")

	t.Setenv(ConfigEnv, good)
	if got := DefaultConfigPath(); got != good {
		t.Errorf("DefaultConfigPath = %q, want $%s = %q", got, ConfigEnv, good)
	}
	cfg, err := LoadConfig("")
	if err != nil || !cfg.Found || cfg.Path != good || len(cfg.LLM) != 1 {
		t.Errorf("LoadConfig(\"\") = %+v, %v; want the file in $%s", cfg, err, ConfigEnv)
	}

	// A file named by $NEXUS_CONFIG must exist, like one named by --config.
	t.Setenv(ConfigEnv, missing)
	if _, err := LoadConfig(""); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("LoadConfig(\"\") with a missing $%s = %v, want an error", ConfigEnv, err)
	}
	if _, err := LoadConfig(missing); err == nil {
		t.Error("LoadConfig of a missing explicit file succeeded")
	}
	cfg, err = LoadConfig(good)
	if err != nil || cfg.Path != good {
		t.Errorf("LoadConfig(%q) = %+v, %v", good, cfg, err)
	}
}
