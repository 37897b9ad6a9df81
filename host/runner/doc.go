// Package runner runs evaluations: it streams a task's instances, solves
// each with an agent in its own execution (its own runtime, tool state and
// trajectory) under a per-instance timeout, has the task score the output,
// and records every result in the run store as soon as the instance ends,
// so a crash loses at most the instances in flight.
//
// It owns the error classes of an instance result (agent_error,
// task_error, infra_error, timeout, cancelled), the run's provenance
// (plugin digests, dataset revision, public LLM config, idempotency key),
// resuming an interrupted run, and the run summary. It does not own the
// database (host/store) nor the display (cmd/nexus-host).
package runner
