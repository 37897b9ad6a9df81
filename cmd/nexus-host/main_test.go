package main_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/internal/testkit"
)

var (
	// builder builds the plugins the tests lay out, each once.
	builder *testkit.Builder
	// hostBin is the nexus-host binary under test.
	hostBin string
)

func TestMain(m *testing.M) {
	var err error
	if builder, err = testkit.NewBuilder(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if hostBin, err = builder.Binary("cmd/nexus-host"); err != nil {
		builder.Cleanup()
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
