package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/launch"
	"github.com/nexus-eval/nexus/host/llm"
	"github.com/nexus-eval/nexus/host/registry"
	"github.com/nexus-eval/nexus/host/store"
)

// HostVersion is the version of this binary's build: the main module's
// version, else its VCS revision (with "+dirty" when modified), else
// "devel".
func HostVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel-" + rev[:min(len(rev), 12)] + dirty
}

// normalizeArgs checks the task arguments and turns "no arguments" into {}.
func normalizeArgs(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("task args are not valid JSON: %s", raw)
	}
	return raw, nil
}

// sameJSON reports whether a and b hold the same JSON value (no value
// counting as {}).
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	na, _ := normalizeArgs(a)
	nb, _ := normalizeArgs(b)
	if json.Unmarshal(na, &va) != nil || json.Unmarshal(nb, &vb) != nil {
		return bytes.Equal(na, nb)
	}
	return reflect.DeepEqual(va, vb)
}

// llmEntry is the run record of the chosen LLM: its name and public
// config (no secrets).
type llmEntry struct {
	Name string `json:"name"`
	llm.PublicEntry
}

func llmRecord(name string, cfg *llm.Config) (json.RawMessage, error) {
	if name == "" {
		return nil, nil
	}
	e, ok := cfg.Public()[name]
	if !ok {
		where := "the host config"
		if cfg != nil && cfg.Path != "" {
			where = cfg.Path
		}
		if names := cfg.Names(); len(names) > 0 {
			return nil, fmt.Errorf("llm %q is not configured in %s: configured are %s", name, where, strings.Join(names, ", "))
		}
		return nil, fmt.Errorf("llm %q is not configured: add [llm.%s] to %s (or pass --config FILE)", name, name, where)
	}
	return json.Marshal(llmEntry{Name: name, PublicEntry: e})
}

// adopt fills cfg from the run being resumed and refuses a different task,
// agent or task arguments.
func adopt(cfg *Config, prev *store.Run) error {
	same := func(kind, want, got string, lookup func(string) (registry.Meta, error)) error {
		if got == "" || got == want {
			return nil
		}
		a, err1 := lookup(want)
		b, err2 := lookup(got)
		if err1 == nil && err2 == nil && a.Qualified() == b.Qualified() {
			return nil
		}
		return fmt.Errorf("resume: run %s is of %s %q, not %q: drop --%s to resume it, or drop --resume to start a new run", prev.ID, kind, want, got, kind)
	}
	if err := same("task", prev.Task, cfg.Task, cfg.Host.Tasks.Lookup); err != nil {
		return err
	}
	if err := same("agent", prev.Agent, cfg.Agent, cfg.Host.Agents.Lookup); err != nil {
		return err
	}
	cfg.Task, cfg.Agent = prev.Task, prev.Agent
	if len(cfg.TaskArgs) == 0 {
		cfg.TaskArgs = prev.TaskArgs
	} else if !sameJSON(cfg.TaskArgs, prev.TaskArgs) {
		return fmt.Errorf("resume: run %s was started with task args %s, not %s: drop --task-arg to reuse its args, or drop --resume to start a new run",
			prev.ID, orEmpty(prev.TaskArgs), cfg.TaskArgs)
	}
	if cfg.LLM == "" {
		cfg.LLM = stringField(prev.LLM, "name")
	}
	return nil
}

func orEmpty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	return string(raw)
}

// pluginRefs identifies the plugin binaries behind the given (already
// loaded) components: the digest of the running binary, else of the file.
func pluginRefs(h *host.Host, metas ...registry.Meta) []store.PluginRef {
	var refs []store.PluginRef
	for _, m := range metas {
		if slices.ContainsFunc(refs, func(r store.PluginRef) bool { return r.Name == m.Plugin }) {
			continue
		}
		ref := store.PluginRef{Name: m.Plugin, Version: m.Version}
		if m.Origin != nil {
			o := m.Origin()
			ref.SHA256, ref.Protocol = o.SHA256, o.Protocol
		}
		if ref.SHA256 == "" {
			for _, man := range h.Manifests() {
				if man.Path == m.Source {
					ref.SHA256, _ = launch.FileSHA256(man.BinaryPath())
					break
				}
			}
		}
		refs = append(refs, ref)
	}
	return refs
}

// checkResume refuses to resume prev as cur when what determines the
// results changed (unless force, which adds a note instead), or when prev
// may still be running elsewhere.
func checkResume(prev, cur *store.Run, force bool, notes *[]string) error {
	if prev.Status == store.StatusRunning {
		msg := fmt.Sprintf("run %s is marked running: another nexus-host may be running it now", prev.ID)
		if !force {
			return fmt.Errorf("resume: %s; if it is not (it was killed), resume it with --force", msg)
		}
		*notes = append(*notes, msg+"; resumed anyway (--force)")
	}
	if prev.IdempotencyKey == cur.IdempotencyKey {
		return nil
	}
	changes := Changes(prev, cur)
	if !force {
		return fmt.Errorf("resume: run %s: %w: %s; its results would not be comparable: start a new run (drop --resume), or pass --force to resume it anyway",
			prev.ID, ErrChanged, strings.Join(changes, "; "))
	}
	*notes = append(*notes, fmt.Sprintf("resumed although %s (--force): the run's record still names what it started with", strings.Join(changes, "; ")))
	return nil
}

// Changes names what differs between two runs' idempotency key parts.
func Changes(prev, cur *store.Run) []string {
	var out []string
	if prev.Task != cur.Task {
		out = append(out, fmt.Sprintf("task %q is now %q", prev.Task, cur.Task))
	}
	if prev.Agent != cur.Agent {
		out = append(out, fmt.Sprintf("agent %q is now %q", prev.Agent, cur.Agent))
	}
	if !sameJSON(prev.TaskArgs, cur.TaskArgs) {
		out = append(out, fmt.Sprintf("task args %s are now %s", orEmpty(prev.TaskArgs), orEmpty(cur.TaskArgs)))
	}
	if prev.DatasetRevision != cur.DatasetRevision {
		out = append(out, fmt.Sprintf("dataset revision %q is now %q", prev.DatasetRevision, cur.DatasetRevision))
	}
	old := map[string]string{}
	for _, p := range prev.Plugins {
		old[p.Name] = p.SHA256
	}
	now := map[string]bool{}
	for _, p := range cur.Plugins {
		now[p.Name] = true
		switch d, ok := old[p.Name]; {
		case !ok:
			out = append(out, fmt.Sprintf("plugin %q is new", p.Name))
		case d != p.SHA256:
			out = append(out, fmt.Sprintf("plugin %q binary changed (sha256 %s is now %s)", p.Name, short(d), short(p.SHA256)))
		}
	}
	for _, p := range prev.Plugins {
		if !now[p.Name] {
			out = append(out, fmt.Sprintf("plugin %q is no longer used", p.Name))
		}
	}
	if !sameJSON(prev.LLM, cur.LLM) {
		out = append(out, fmt.Sprintf("LLM config %s is now %s", orNone(prev.LLM), orNone(cur.LLM)))
	}
	if len(out) == 0 {
		out = append(out, "its idempotency key differs (recorded by another nexus-host version?)")
	}
	return out
}

func orNone(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(none)"
	}
	return string(raw)
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	if d == "" {
		return "(none)"
	}
	return d
}
