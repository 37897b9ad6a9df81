// Command many is a hostile test plugin that serves as many tools as
// $NEXUS_TEST_MANY says (default 3), named t00000, t00001, ..., each with a
// description padded to $NEXUS_TEST_MANY_PAD bytes, so its Describe answer
// can be made enormous. The host passes the variables with
// host.Options.PluginEnv.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/nexus-eval/nexus/sdk"
)

type Empty struct{}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

func main() {
	n, pad := envInt("NEXUS_TEST_MANY", 3), envInt("NEXUS_TEST_MANY_PAD", 0)
	tools := make([]*sdk.Component, 0, n)
	for i := range n {
		desc := fmt.Sprintf("Tool number %d", i)
		if len(desc) < pad {
			desc += strings.Repeat(".", pad-len(desc))
		}
		tools = append(tools, sdk.Tool(fmt.Sprintf("t%05d", i), desc, func(context.Context, Empty) (Empty, error) { return Empty{}, nil }))
	}
	sdk.Serve(sdk.Plugin{Name: "many", Version: "0.1.0", Description: "Serves a configurable number of tools"}, tools...)
}
