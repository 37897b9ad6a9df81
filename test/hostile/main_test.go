// Package hostile holds end-to-end tests of the host against hostile
// input: manifests that try to escape, exhaust or crash discovery, and
// plugin binaries that flood, stall, or describe themselves without end.
// Each must be refused or contained with a clear error, never panic, and
// keep the host's memory bounded.
package hostile

import (
	"os"
	"testing"

	"github.com/nexus-eval/nexus/internal/testkit"
)

var builder *testkit.Builder

func TestMain(m *testing.M) {
	if root := os.Getenv(childEnv); root != "" {
		runChild(root, os.Getenv(childToolEnv))
		return
	}
	testkit.Main(m, func(b *testkit.Builder) error {
		builder = b
		return nil
	})
}
