package main_test

import (
	"testing"

	"github.com/nexus-eval/nexus/internal/testkit"
)

var (
	// builder builds the plugins the tests lay out, each once.
	builder *testkit.Builder
	// hostBin is the nexus-host binary under test.
	hostBin string
)

func TestMain(m *testing.M) {
	testkit.Main(m, func(b *testkit.Builder) error {
		builder = b
		var err error
		hostBin, err = b.Binary("cmd/nexus-host")
		return err
	})
}
