package llm

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Clients holds the clients of a config by name. Each is created on first
// Get, so an entry whose API key is not set only fails when it is used.
// Safe for concurrent use.
type Clients struct {
	cfg    *Config
	getenv func(string) string

	mu      sync.Mutex
	clients map[string]*client

	// maxRetryDelay caps the backoff between retries (0: the library's);
	// tests set it to keep retries fast.
	maxRetryDelay time.Duration
}

// NewClients returns the clients of cfg (nil: none), with API keys read
// through getenv (os.Getenv in production).
func NewClients(cfg *Config, getenv func(string) string) *Clients {
	if cfg == nil {
		cfg = &Config{}
	}
	return &Clients{cfg: cfg, getenv: getenv, clients: map[string]*client{}}
}

// Names returns the configured LLM names, sorted.
func (cs *Clients) Names() []string { return cs.cfg.Names() }

// Get returns the client called name, creating it on first use. An unknown
// name or an unset API key variable is an ErrNotConfigured error that says
// what to add where.
func (cs *Clients) Get(name string) (Client, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.clients[name]; ok {
		return c, nil
	}
	e, ok := cs.cfg.LLM[name]
	if !ok {
		return nil, cs.unknown(name)
	}
	c, err := newClient(name, e, cs.getenv, cs.maxRetryDelay)
	if err != nil {
		return nil, err
	}
	cs.clients[name] = c
	return c, nil
}

func (cs *Clients) unknown(name string) error {
	configured := "none are configured"
	if names := cs.cfg.Names(); len(names) > 0 {
		configured = "configured: " + strings.Join(names, ", ")
	}
	where := "the host config file (--config)"
	switch {
	case cs.cfg.Path != "" && cs.cfg.Found:
		where = cs.cfg.Path
	case cs.cfg.Path != "":
		where = cs.cfg.Path + " (it does not exist yet)"
	}
	return fmt.Errorf("llm %q: %w: no such LLM (%s): add an [llm.%s] table with base_url and model to %s",
		name, ErrNotConfigured, configured, name, where)
}

// Close drops the idle connections of every client created so far. Clients
// stay usable; Close only releases what is not in use.
func (cs *Clients) Close() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.clients {
		c.closeIdle()
	}
}
