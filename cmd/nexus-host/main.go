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
	// The first signal cancels gracefully (in-flight work is cancelled and
	// recorded, plugins are stopped); a second one ends the process at
	// once, and the kernel takes the plugins down with it.
	context.AfterFunc(ctx, stop)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nexus-host: %v\n", err)
		os.Exit(1)
	}
}
