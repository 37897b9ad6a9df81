package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// KeyParts is everything that determines a run's results.
type KeyParts struct {
	Task  string
	Agent string
	// TaskArgs is a JSON object; key order and whitespace do not matter,
	// and nil, null and {} are the same.
	TaskArgs        json.RawMessage
	DatasetRevision string
	// PluginDigests are the sha256 of every plugin binary used; order and
	// duplicates do not matter.
	PluginDigests []string
	// LLM is the public LLM configuration; key order and whitespace do not
	// matter.
	LLM json.RawMessage
}

// KeyParts returns the parts of r's idempotency key.
func (r *Run) KeyParts() KeyParts {
	p := KeyParts{Task: r.Task, Agent: r.Agent, TaskArgs: r.TaskArgs, DatasetRevision: r.DatasetRevision, LLM: r.LLM}
	for _, pl := range r.Plugins {
		p.PluginDigests = append(p.PluginDigests, pl.SHA256)
	}
	return p
}

// keyVersion names the canonical form below; changing the form changes
// every key, so it gets a new version.
const keyVersion = "nexus-run-key/v1"

// IdempotencyKey returns the hex sha256 of a canonical JSON encoding of p:
// runs with equal keys would produce the same results, so a run can find
// its earlier self (FindRunByKey) and resume it. It fails only when
// TaskArgs or LLM is not valid JSON.
func IdempotencyKey(p KeyParts) (string, error) {
	args, err := canonicalJSON(p.TaskArgs)
	if err != nil {
		return "", fmt.Errorf("idempotency key: task args: %w", err)
	}
	if args == "null" {
		args = "{}"
	}
	llm, err := canonicalJSON(p.LLM)
	if err != nil {
		return "", fmt.Errorf("idempotency key: llm config: %w", err)
	}
	digests := slices.Clone(p.PluginDigests)
	slices.Sort(digests)
	digests = slices.Compact(digests)
	if digests == nil {
		digests = []string{}
	}
	doc, err := json.Marshal(struct {
		Version         string          `json:"v"`
		Task            string          `json:"task"`
		Agent           string          `json:"agent"`
		TaskArgs        json.RawMessage `json:"task_args"`
		DatasetRevision string          `json:"dataset_revision"`
		PluginDigests   []string        `json:"plugin_digests"`
		LLM             json.RawMessage `json:"llm"`
	}{keyVersion, p.Task, p.Agent, json.RawMessage(args), p.DatasetRevision, digests, json.RawMessage(llm)})
	if err != nil {
		return "", fmt.Errorf("idempotency key: %w", err)
	}
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:]), nil
}

// canonicalJSON re-encodes raw with object keys sorted and no
// insignificant whitespace; numbers keep their literal text. Empty input is
// "null".
func canonicalJSON(raw json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "null", nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("more than one JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return "", err
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}
