// Command nexus-host discovers, inspects and calls Nexus plugins. It is a
// thin layer: flags go to the host library, results come back as tables or
// JSON.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nexus-host: %v\n", err)
		os.Exit(1)
	}
}
