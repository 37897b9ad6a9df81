// Package hostile holds end-to-end tests of the host against hostile
// input: manifests that try to escape, exhaust or crash discovery, and
// plugin binaries that flood, stall, or describe themselves without end.
// Each must be refused or contained with a clear error, never panic, and
// keep the host's memory bounded.
package hostile

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/internal/testkit"
)

var builder *testkit.Builder

func TestMain(m *testing.M) {
	if root := os.Getenv(childEnv); root != "" {
		runChild(root, os.Getenv(childToolEnv))
		return
	}
	var err error
	if builder, err = testkit.NewBuilder(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	builder.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
